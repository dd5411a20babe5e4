"""Weights per GPU under --tp / --ep, and whether they fit the --gpu named."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ffn_cli.hardware import GPU
from ffn_cli.i18n import N_, _
from ffn_cli.models.rank_memory import RankMemory
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_bytes

__all__ = ["rank_memory_data", "rank_memory_view"]

NOT_COUNTED = N_(
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
    experts = _("routed experts ÷ {ranks}").format(ranks=r.ep if r.ep > 1 else r.tp)
    rows: list[Any] = [
        [experts, fmt_bytes(r.expert_bytes)],
        [_("other matrices ÷ {ranks}").format(ranks=r.tp), fmt_bytes(r.split_bytes)],
        [_("replicated: biases, norms, routers"), fmt_bytes(r.replicated_bytes)],
        None,
        ["[bold]" + _("weights per GPU") + "[/]", f"[bold]{fmt_bytes(r.per_gpu_bytes)}[/]"],
    ]
    if gpu is not None:
        memory = gpu.memory_gb * 1e9
        share = f"{100 * r.per_gpu_bytes / memory:.1f}%"
        verdict = _("fits, weights use {share}") if _fits(r, gpu) else _("[bold]does not fit[/], weights use {share}")
        rows.append([f"{gpu.name}: {gpu.memory_gb:g} GB", fmt_bytes(memory)])
        rows.append([verdict.format(share=share), ""])
    title = _("per GPU: --tp {tp} --ep {ep} on {gpus} GPUs (checkpoint {bytes})").format(
        tp=r.tp, ep=r.ep, gpus=r.gpus, bytes=fmt_bytes(r.total_bytes)
    )
    columns = [Col(_("weights"), "text"), Col(_("bytes"))]
    return FitTable(Text(title), columns, rows, caption=Text(_(NOT_COUNTED), style="dim"))
