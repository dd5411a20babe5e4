"""The `--json` of `ffn params` and `ffn bench`, each answer's object built in one place from the
pieces the render modules make: what the command prints and what `ffn_cli.params(...)` /
`ffn_cli.bench(...)` give as `to_dict()` are the same call."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ffn_cli.benchmark.result import BenchReport
    from ffn_cli.hardware import GPU
    from ffn_cli.models.comparison import Comparison
    from ffn_cli.models.count import ModelParams
    from ffn_cli.models.explain import BlockExplain
    from ffn_cli.models.layer import FFNReport
    from ffn_cli.models.seq_flops import FlopsAtLength, LayerStack, OverLengths
    from ffn_cli.parallel.accounting import RankParams
    from ffn_cli.parallel.result import ParallelTiming
    from ffn_cli.spec import FFNSpec

__all__ = [
    "bench_data",
    "comparison_params_data",
    "ffn_gpu_data",
    "ffn_params_data",
    "finite_floats",
    "json_default",
    "json_ready",
    "model_params_data",
    "parallel_bench_data",
    "rank_params_data",
]


def _explained(block: BlockExplain | None) -> dict[str, Any]:
    return {"explain": block.data()} if block is not None else {}


def _over_lengths(stack: LayerStack, rows: tuple[FlopsAtLength, ...]) -> dict[str, Any]:
    from ffn_cli.render.seq_flops import seq_flops_data

    return {"flops_over_seq_len": seq_flops_data(stack, rows)} if rows else {}


def ffn_params_data(report: FFNReport, over: OverLengths | None, block: BlockExplain | None) -> dict[str, Any]:
    """One FFN beside its attention, its FLOPs over --seq-len (None: none asked), --explain's block."""
    from ffn_cli.render.params.report import ffn_report_data

    return ffn_report_data(report) | (_over_lengths(*over) if over is not None else {}) | _explained(block)


def comparison_params_data(comparison: Comparison, warnings: list[str]) -> dict[str, Any]:
    """Variants side by side, and what --match-params could not match."""
    from ffn_cli.render.params.comparison import comparison_data

    return comparison_data(comparison) | {"warnings": warnings}


def rank_params_data(spec: FFNSpec, ranks: list[RankParams]) -> dict[str, Any]:
    """What each of --tp / --ep ranks holds of one FFN."""
    from ffn_cli.accounting import total_params
    from ffn_cli.render.parallel import rank_params_json

    return rank_params_json(spec, ranks) | {"total_params": total_params(spec)}


def ffn_gpu_data(report: FFNReport, passes: list[Any] | None, gpu: GPU, column: str) -> dict[str, Any]:
    """One FFN's counts and its roofline on --gpu; on a row with no peak rate (passes None), a
    null roofline and the row's notes, which say why."""
    from ffn_cli.render.params.report import ffn_report_data
    from ffn_cli.render.prediction import ffn_roofline_data

    if passes is None:
        return ffn_report_data(report) | {"roofline": None, "roofline_missing": "; ".join(gpu.notes)}
    return ffn_report_data(report) | {"roofline": ffn_roofline_data(passes, gpu, column)}


def model_params_data(
    counted: ModelParams,
    dtype: str,
    stack: LayerStack,
    rows: tuple[FlopsAtLength, ...],
    costs: dict[str, Any],
    block: BlockExplain | None,
) -> dict[str, Any]:
    """One whole model: its counts, FLOPs over --seq-len, what it costs (services/costs.py), --explain."""
    from ffn_cli.render.params.model import model_data

    return model_data(counted, dtype) | _over_lengths(stack, rows) | costs | _explained(block)


def bench_data(report: BenchReport, model: dict[str, Any] | None) -> dict[str, Any]:
    """The timings, and the model layer they are of (--preset, --config, --model)."""
    from ffn_cli.render.bench import bench_json

    return bench_json(report) | ({"model": model} if model is not None else {})


def parallel_bench_data(timing: ParallelTiming) -> dict[str, Any]:
    """One sharded forward under --tp / --ep."""
    from ffn_cli.render.parallel import parallel_timing_json

    return parallel_timing_json(timing)


def json_ready(data: Any) -> Any:
    """`data` exactly as `--json` prints it, read back: plain dicts, lists, numbers, None."""
    import json

    return json.loads(json.dumps(finite_floats(data), default=json_default, allow_nan=False))


def finite_floats(value: Any) -> Any:
    """NaN and ±Inf, which JSON cannot hold (Python would write bare NaN / Infinity), as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_floats(v) for v in value]
    return value


def json_default(value: Any) -> Any:
    """What json.dumps cannot write itself: tuples as lists, NumPy and torch scalars as numbers."""
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "item"):  # numpy and torch scalars
        return finite_floats(value.item())
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
