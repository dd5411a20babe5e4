"""The roofline of a model's forward pass on a named GPU: per batch, one layer's FFN, one
layer's attention and the whole model, with FLOPs, bytes, intensity against the ridge, the
bound and the time lower bound."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ffn_cli.hardware import GPU
from ffn_cli.models.roofline import PartCost, PassCost
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_bytes, fmt_flops

__all__ = ["fmt_time", "roofline_data", "roofline_view"]

BOUND_NOTE = (
    "time ≥ max(FLOPs / peak, bytes / bandwidth): a lower bound, not a forecast. FLOPs: matmuls of the "
    "active path; bytes: weights once in their stored format, each part's input and output once, the KV cache"
)


def fmt_time(seconds: float) -> str:
    """In milliseconds, as --json's time_lower_bound_ms: 0.421 ms, 41.9 ms."""
    return f"{seconds * 1e3:.3g} ms"


def _part_data(p: PartCost, peak: float, bandwidth: float) -> dict[str, Any]:
    r = p.roofline(peak, bandwidth)
    return {
        "flops": p.flops,
        "bytes": p.bytes_,
        "weight_bytes": p.weight_bytes,
        "activation_bytes": p.activation_bytes,
        "kv_cache_bytes": p.kv_bytes,
        "intensity_flop_per_byte": r.intensity,
        "bound": r.bound,
        "compute_s": r.compute_s,
        "memory_s": r.memory_s,
        "time_lower_bound_s": r.time_s,
        "time_lower_bound_ms": r.time_s * 1e3,
        **({"experts": p.experts, "experts_touched_expected": p.experts_touched} if p.experts else {}),
    }


def roofline_data(costs: list[PassCost], gpu: GPU, dtype: str, origin: str) -> dict[str, Any]:
    peak = gpu.tflops[dtype]
    return {
        "gpu": gpu.key,
        "peak_dtype": dtype,
        "peak_tflops": peak,
        "bandwidth_gbps": gpu.bandwidth_gbps,
        "ridge_flop_per_byte": gpu.ridge(dtype),
        "weights": origin,
        "note": BOUND_NOTE,
        "cases": [
            {
                "phase": c.case.phase,
                "batch": c.case.batch,
                "seq_len": c.case.seq_len,
                "tokens": c.case.tokens,
                "ffn_one_layer": _part_data(c.ffn, peak, gpu.bandwidth_gbps),
                "attention_one_layer_mean": _part_data(c.attention, peak, gpu.bandwidth_gbps),
                "model": _part_data(c.model, peak, gpu.bandwidth_gbps),
            }
            for c in costs
        ],
    }


def roofline_view(costs: list[PassCost], gpu: GPU, dtype: str, origin: str, n_layers: int) -> FitTable:
    peak, bandwidth = gpu.tflops[dtype], gpu.bandwidth_gbps
    moe = any(c.ffn.experts for c in costs)
    columns = [
        Col("batch"),
        Col("part", "fixed"),
        Col("FLOPs"),
        Col("bytes", drop=3),
        Col("FLOP/B"),
        Col("bound", "fixed"),
        Col("time ≥"),
    ]
    if moe:
        columns.append(Col("experts", drop=2))
    rows: list[Any] = []
    for c in costs:
        if rows:
            rows.append(None)
        for label, p in (("FFN ×1", c.ffn), ("attn ×1", c.attention), (f"model ×{n_layers}", c.model)):
            r = p.roofline(peak, bandwidth)
            bound = f"[bold]{r.bound}[/]" if r.bound == "compute" else r.bound
            cells = [f"{c.case.batch:,}" if p is c.ffn else "", label, fmt_flops(p.flops), fmt_bytes(p.bytes_)]
            cells += [f"{r.intensity:.3g}", bound, fmt_time(r.time_s)]
            if moe:
                cells.append(f"{p.experts_touched:.3g} of {p.experts}" if p.experts else "")
            rows.append(cells)
    case = costs[0].case
    what = f"{case.phase}, context {case.seq_len:,}" if case.phase == "decode" else f"prefill, {case.seq_len:,} tokens per sequence"
    title = Text(f"roofline on {gpu.name} ({dtype} {peak:g} TFLOP/s, {bandwidth:,.0f} GB/s, ridge {gpu.ridge(dtype):.4g} FLOP/B): {what}")
    caption = f"{BOUND_NOTE}. weights: {origin}. attn ×1: the mean layer."
    if moe:
        caption += " experts: read by the pass, E·(1 − (1 − k/E)^T) in expectation under uniform routing (real routers touch fewer)."
    return FitTable(title, columns, rows, caption=Text(caption, style="dim"))
