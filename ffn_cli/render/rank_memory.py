"""Weights per GPU under --tp / --ep, and whether they fit the --gpu named."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ffn_cli.hardware import GPU
from ffn_cli.models.rank_memory import RankMemory
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_bytes

__all__ = ["rank_memory_data", "rank_memory_view"]

NOT_COUNTED = (
    "weights only: the KV cache, activations, CUDA context and allocator slack, and communication buffers are not "
    "counted, so a model that fits here can still run out of memory"
)


def _fits(r: RankMemory, gpu: GPU | None) -> bool | None:
    return None if gpu is None else r.per_gpu_bytes <= gpu.memory_gb * 1e9


def rank_memory_data(r: RankMemory, gpu: GPU | None) -> dict[str, Any]:
    return {
        "tp": r.tp,
        "ep": r.ep,
        "gpus": r.gpus,
        "expert_bytes": r.expert_bytes,
        "split_bytes": r.split_bytes,
        "replicated_bytes": r.replicated_bytes,
        "per_gpu_bytes": r.per_gpu_bytes,
        "checkpoint_bytes": r.total_bytes,
        "gpu": None if gpu is None else gpu.key,
        "gpu_memory_bytes": None if gpu is None else int(gpu.memory_gb * 1e9),
        "fits": _fits(r, gpu),
        "not_counted": NOT_COUNTED,
    }


def rank_memory_view(r: RankMemory, gpu: GPU | None) -> FitTable:
    experts = f"routed experts ÷ {r.ep if r.ep > 1 else r.tp}"
    rows: list[Any] = [
        [experts, fmt_bytes(r.expert_bytes)],
        [f"other matrices ÷ {r.tp}", fmt_bytes(r.split_bytes)],
        ["replicated: biases, norms, routers", fmt_bytes(r.replicated_bytes)],
        None,
        ["[bold]weights per GPU[/]", f"[bold]{fmt_bytes(r.per_gpu_bytes)}[/]"],
    ]
    if gpu is not None:
        memory = gpu.memory_gb * 1e9
        verdict = "fits" if _fits(r, gpu) else "[bold]does not fit[/]"
        rows.append([f"{gpu.name}: {gpu.memory_gb:g} GB", fmt_bytes(memory)])
        rows.append([f"{verdict}, weights use {100 * r.per_gpu_bytes / memory:.1f}%", ""])
    title = Text(f"per GPU: --tp {r.tp} --ep {r.ep} on {r.gpus} GPUs (checkpoint {fmt_bytes(r.total_bytes)})")
    return FitTable(title, [Col("weights", "text"), Col("bytes")], rows, caption=Text(NOT_COUNTED, style="dim"))
