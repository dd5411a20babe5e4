"""The presenters of `ffn bench`'s results (services/results.py): a sweep's timings (with the
model layer they are of) and one sharded forward's. The model layer's panel and the sharded
run's table load with the result that shows them (tests/test_cli_startup.py)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType

from ffn_cli.render.bench import bench_json, bench_view
from ffn_cli.render.presenters import Presented
from ffn_cli.services.results import BenchSweep, ShardedTiming

__all__ = ["present"]


def present(result: BenchSweep | ShardedTiming) -> Presented:
    """The view and the `--json` of either of `ffn bench`'s results."""
    if isinstance(result, ShardedTiming):
        from ffn_cli.render.parallel import parallel_timing_json, render_parallel_timing

        timing = result.timing
        return Presented(lambda: render_parallel_timing(timing), lambda: parallel_timing_json(timing))
    return Presented(lambda: _sweep_view(result), lambda: _sweep_data(result))


def _sweep_view(r: BenchSweep) -> RenderableType:
    if r.choice is None:
        return Group(bench_view(r.report))
    from ffn_cli.render.model_layer import model_layer_view

    return Group(model_layer_view(r.choice), bench_view(r.report))


def _sweep_data(r: BenchSweep) -> dict[str, Any]:
    """The timings, and the model layer they are of (--preset, --config, --model)."""
    return bench_json(r.report) | ({"model": r.choice.data()} if r.choice is not None else {})
