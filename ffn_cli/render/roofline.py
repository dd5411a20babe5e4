"""The roofline of a model's forward pass on a named GPU: per batch, one layer's FFN, one
layer's attention and the whole model, with FLOPs, bytes, intensity against the ridge, the
bound and the time lower bound."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ffn_cli.costs.roofline.model_pass import PartCost, PassCost
from ffn_cli.costs.roofline.per_gpu import GPUPass
from ffn_cli.hardware import GPU
from ffn_cli.i18n import N_, Message, _, ngettext, shown, tidy
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_bytes, fmt_flops, fmt_rate
from ffn_cli.render.literal import visible

__all__ = ["bound_word", "fmt_intensity", "fmt_time", "part_data", "roofline_data", "roofline_view"]

# The ceiling that binds, as the tables name it (--json keeps "compute" / "memory").
_BOUND_WORDS = {"compute": N_("compute"), "memory": N_("memory")}

BOUND_NOTE = N_(
    "time ≥ max(FLOPs / peak, bytes / bandwidth): a lower bound, not a forecast. FLOPs: matmuls of the "
    "active path; bytes: weights once in their stored format, each part's input and output once, the KV cache"
)


BACKWARD_NOTE = N_(
    "bwd: the backward of a training step: 2 × the matmul FLOPs; bytes: the weights read again, their gradients "
    "written in the compute dtype, the output's gradient read and the input's written, the activations the forward "
    "saved read once (an FFN's as autograd saves them; attention's input, Q, K, V, output and log-sum-exp)"
)


def bound_word(bound: str) -> str:
    """'compute' or 'memory' in the current language."""
    return _(_BOUND_WORDS.get(bound, bound))


def fmt_intensity(flop_per_byte: float) -> str:
    """Three digits, whole numbers from 1,000 up: 0.998, 63.4, 1,950; never an exponent."""
    return f"{flop_per_byte:.3g}" if flop_per_byte < 1000 else f"{flop_per_byte:,.0f}"


def fmt_time(seconds: float) -> str:
    """Three digits, in milliseconds under a second (as --json's time_lower_bound_ms): 0.421 ms,
    41.9 ms, 2.35 s, 1,234 s; never an exponent."""
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s" if seconds < 1000 else f"{seconds:,.0f} s"


def part_data(p: PartCost, peak: float, bandwidth: float) -> dict[str, Any]:
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


def _backward_data(p: PartCost, peak: float, bandwidth: float) -> dict[str, Any]:
    """A part's backward: the forward's fields, the KV cache's replaced by what it adds."""
    data = part_data(p, peak, bandwidth)
    del data["kv_cache_bytes"]
    data["weight_gradient_bytes"] = p.gradient_bytes
    data["saved_activation_bytes"] = p.saved_bytes
    return data


PER_GPU_NOTE = N_(
    "per GPU: its share of the pass (weights and FLOPs ÷ --tp; the routed experts on the busiest --ep rank, its "
    "expected experts touched; its KV heads). comm: each layer's --tp all-reduces and --ep all-to-all (dispatch "
    "and combine), the bytes one GPU sends over {link} at {gbps} GB/s (half each way), added to the time, not "
    "overlapped, no latency counted"
)
NO_LINK_NOTE = N_("per GPU: its share of the pass; comm not counted: the table has no GPU-to-GPU bandwidth for {gpu}")
SPANS_NODES_NOTE = N_(
    "{gpus} GPUs span more than one {link} domain ({node} GPUs): the network between domains, slower and not in the "
    "table, carries part of the traffic, so comm here is a lower bound"
)
SPANS_BRIDGES_NOTE = N_(
    "{gpus} GPUs span {bridges} NVLink bridges of {node}: what crosses between them (where --tp spans bridges, each "
    "all-reduce in two levels, a shard across the bridges after each bridge's own; an all-to-all's copies to another "
    "bridge's GPUs) runs over {link} at {gbps} GB/s"
)
SPANS_SERVERS_NOTE = N_(
    "{gpus} GPUs span more than one server of {node}: the network between servers, slower and not in the table, "
    "carries part of the traffic, so comm here is a lower bound"
)


def _comm_data(g: GPUPass, model: PartCost, gpu: GPU, peak: float) -> dict[str, Any]:
    comm = g.comm
    seconds = comm.time_s(gpu)
    compute = model.roofline(peak, gpu.bandwidth_gbps).time_s
    return {
        "attention_layer_bytes_sent": comm.attention_bytes,
        "ffn_layer_bytes_sent": comm.ffn_bytes,
        "model_bytes_sent": comm.model_bytes,
        "model_bytes_between_domains": comm.between_domains_bytes,
        "model_s": seconds,
        "model_ms": None if seconds is None else seconds * 1e3,
        "time_per_gpu_lower_bound_ms": (compute + (seconds or 0.0)) * 1e3,
    }


def layout_data(g: GPUPass, gpu: GPU) -> dict[str, Any]:
    layout = g.layout
    bridged = gpu.spans_bridges(layout.gpus)
    return {
        "tp": layout.tp,
        "ep": layout.ep,
        "gpus": layout.gpus,
        "attention_groups": layout.dp,
        "per_gpu": True,
        "link": gpu.link or None,
        "link_gbps": gpu.link_gbps,
        "link_source": gpu.source if gpu.link_gbps is not None else None,
        "communication": "added, not overlapped" if gpu.link_gbps is not None else "not counted: no link bandwidth",
        "link_domain_gpus": gpu.link_domain,
        # NVLink-bridged cards past their bridge: what crosses between bridges runs over this link
        "between_domains_link": gpu.beyond_domain_link if bridged else None,
        "between_domains_gbps": gpu.beyond_domain_gbps if bridged else None,
        "network_past_gpus": gpu.network_past,
        "spans_nodes": gpu.spans_network(layout.gpus),
    }


def roofline_data(
    costs: list[PassCost],
    gpu: GPU,
    dtype: str,
    origin: str,
    backward: list[PassCost] | None = None,
    per_gpu: list[GPUPass] | None = None,
) -> dict[str, Any]:
    peak, bandwidth = gpu.tflops[dtype], gpu.bandwidth_gbps
    cases = [
        {
            "phase": c.case.phase,
            "batch": c.case.batch,
            "seq_len": c.case.seq_len,
            "tokens": c.case.tokens,
            "ffn_one_layer": part_data(c.ffn, peak, bandwidth),
            "attention_one_layer_mean": part_data(c.attention, peak, bandwidth),
            "model": part_data(c.model, peak, bandwidth),
        }
        for c in costs
    ]
    for case, g in zip(cases, per_gpu or [], strict=False):
        case["communication"] = _comm_data(g, g.cost.model, gpu, peak)
    for case, b in zip(cases, backward or [], strict=False):
        case["backward"] = {
            "ffn_one_layer": _backward_data(b.ffn, peak, bandwidth),
            "attention_one_layer_mean": _backward_data(b.attention, peak, bandwidth),
            "model": _backward_data(b.model, peak, bandwidth),
        }
    return {
        "gpu": gpu.key,
        "peak_dtype": dtype,
        "peak_tflops": peak,
        "bandwidth_gbps": gpu.bandwidth_gbps,
        "ridge_flop_per_byte": gpu.ridge(dtype),
        "weights": origin,
        "note": BOUND_NOTE,
        **({"backward_note": BACKWARD_NOTE} if backward else {}),
        **({"gpus": layout_data(per_gpu[0], gpu)} if per_gpu else {}),
        "cases": cases,
    }


def _comm_rows(g: GPUPass, gpu: GPU, peak: float, n_layers: int) -> list[list[str]]:
    """Under a batch's rows: what one GPU sends over the pass, and its time with the compute's."""
    model = g.cost.model.roofline(peak, gpu.bandwidth_gbps).time_s
    seconds = g.comm.time_s(gpu)
    if seconds is None:
        return []
    comm = ["", _("comm ×{n}").format(n=n_layers), "", fmt_bytes(g.comm.model_bytes), "", _("link"), fmt_time(seconds)]
    total = ["", _("per GPU"), "", "", "", "", f"[bold]{fmt_time(model + seconds)}[/]"]
    return [comm, total]


def roofline_view(
    costs: list[PassCost],
    gpu: GPU,
    dtype: str,
    origin: str,
    n_layers: int,
    backward: list[PassCost] | None = None,
    per_gpu: list[GPUPass] | None = None,
    real_picks: Message | None = None,
    dense_layers: int = 0,
    mtp_layers: int = 0,
    reapplied_layers: int = 0,
) -> FitTable:
    peak, bandwidth = gpu.tflops[dtype], gpu.bandwidth_gbps
    moe = any(c.ffn.experts for c in costs)
    columns = [
        Col(_("batch")),
        Col(_("part"), "fixed"),
        Col("FLOPs"),
        Col(_("bytes"), drop=4),  # a comm row's one number beside its time: it stays longer
        Col("FLOP/B", drop=3),  # FLOPs over bytes: read from the two beside it
        Col(_("bound"), "fixed"),
        Col(_("time ≥")),
    ]
    if moe:
        columns.append(Col(_("experts"), drop=2))
    rows: list[Any] = []
    for k, c in enumerate(costs):
        if rows:
            rows.append(None)
        parts = [(_("FFN ×1"), c.ffn), (_("attn ×1"), c.attention), (_("model ×{n}").format(n=n_layers), c.model)]
        if backward is not None:
            b = backward[k]
            parts += [
                (_("FFN ×1 bwd"), b.ffn),
                (_("attn ×1 bwd"), b.attention),
                (_("model ×{n} bwd").format(n=n_layers), b.model),
            ]
        for label, p in parts:
            r = p.roofline(peak, bandwidth)
            bound = f"[bold]{bound_word(r.bound)}[/]" if r.bound == "compute" else bound_word(r.bound)
            cells = [f"{c.case.batch:,}" if p is c.ffn else "", label, fmt_flops(p.flops), fmt_bytes(p.bytes_)]
            cells += [fmt_intensity(r.intensity), bound, fmt_time(r.time_s)]
            if moe:
                cells.append(_("{touched} of {experts}").format(touched=f"{p.experts_touched:.3g}", experts=p.experts) if p.experts else "")
            rows.append(cells)
        if per_gpu is not None:
            rows += [[*r, ""] if moe else r for r in _comm_rows(per_gpu[k], gpu, peak, n_layers)]
    case = costs[0].case
    if case.phase == "decode":
        what = _("decode, context {n}").format(n=f"{case.seq_len:,}")
    else:
        what = _("prefill, {n} tokens per sequence").format(n=f"{case.seq_len:,}")
    title_text = _("roofline on {gpu} ({dtype} {peak} TFLOP/s, {bandwidth} GB/s, ridge {ridge} FLOP/B): {what}").format(
        gpu=visible(gpu.label), dtype=dtype, peak=fmt_rate(peak), bandwidth=f"{bandwidth:,.0f}", ridge=f"{gpu.ridge(dtype):.4g}", what=what
    )
    if per_gpu is not None:
        layout = per_gpu[0].layout
        title_text = _("one GPU of {gpus} (--tp {tp} --ep {ep}), {roofline}").format(
            gpus=layout.gpus, tp=layout.tp, ep=layout.ep, roofline=title_text
        )
    title = Text(tidy(title_text))  # a GPU's scope said in Chinese ends in a full-width bracket: no space after it
    caption = _("{note}. weights: {origin}. attn ×1: the mean layer.").format(note=_(BOUND_NOTE), origin=shown(origin))
    if dense_layers:  # FFN ×1 is a MoE layer's: the dense ones would read otherwise
        one = N_(" FFN ×1: a MoE layer's; model ×{n} holds the dense FFN layer too.")
        many = N_(" FFN ×1: a MoE layer's; model ×{n} holds the {dense} dense FFN layers too.")
        caption += _(one if dense_layers == 1 else many).format(n=n_layers, dense=dense_layers)
    if mtp_layers:  # in the memory, not in the pass: a speculative decoder's draft runs beside it
        mtp = ngettext(
            " The checkpoint's {n} multi-token-prediction layer, which the memory counts, is not in this pass (a speculative "
            "decoder runs it beside the model).",
            " The checkpoint's {n} multi-token-prediction layers, which the memory counts, are not in this pass (a speculative "
            "decoder runs them beside the model).",
            mtp_layers,
        )
        caption += mtp.format(n=mtp_layers)
    if reapplied_layers:  # Zamba's shared blocks: held once, read by each layer that runs them
        again = ngettext(
            " {n} layer runs weights an earlier layer holds (a shared block, a later pass) and reads them again.",
            " {n} layers run weights an earlier layer holds (a shared block, a later pass) and read them again.",
            reapplied_layers,
        )
        caption += again.format(n=reapplied_layers)
    if backward is not None:
        caption += _(" {backward_note}.").format(backward_note=_(BACKWARD_NOTE))
    if moe:
        caption += _(" experts: read by the pass, E·(1 − (1 − k/E)^T) in expectation under uniform routing (real routers touch fewer).")
        if real_picks is not None:
            caption += _(" {real_picks}.").format(real_picks=shown(real_picks))
    if per_gpu is not None:
        caption += _(" {per_gpu_note}.").format(per_gpu_note=_per_gpu_caption(per_gpu[0], gpu))
    return FitTable(title, columns, rows, caption=Text(tidy(caption), style="dim"))  # no space after 。


def _per_gpu_caption(g: GPUPass, gpu: GPU) -> str:
    if gpu.link_gbps is None:
        return _(NO_LINK_NOTE).format(gpu=visible(gpu.label))
    text = _(PER_GPU_NOTE).format(link=_(gpu.link), gbps=f"{gpu.link_gbps:,.0f}")
    gpus = g.layout.gpus
    if gpu.spans_bridges(gpus) and gpu.beyond_domain_gbps is not None:
        bridges = -(-gpus // gpu.link_domain)
        said = _(SPANS_BRIDGES_NOTE).format(gpus=gpus, bridges=bridges, node=gpu.link_domain, link=gpu.beyond_domain_link,
                                            gbps=f"{gpu.beyond_domain_gbps:,.0f}")  # fmt: skip
        text += _("; ") + said
    if gpu.spans_network(gpus):
        spans = SPANS_SERVERS_NOTE if gpu.beyond_domain_gbps is not None else SPANS_NODES_NOTE
        text += _("; ") + _(spans).format(gpus=gpus, node=gpu.network_past, link=_(gpu.link))
    return text
