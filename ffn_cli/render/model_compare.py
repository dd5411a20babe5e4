"""Real models side by side: one row per model, as a table or JSON from the same fields."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.costs.weights import towers_words
from ffn_cli.i18n import _
from ffn_cli.models.count import ModelParams
from ffn_cli.models.seq_flops import FlopsAtLength, LayerStack
from ffn_cli.render.fit import Col, Wide
from ffn_cli.render.format import fmt_bytes, fmt_count
from ffn_cli.render.literal import literal, visible
from ffn_cli.render.params.common import table

__all__ = ["ComparedModel", "model_comparison_data", "model_comparison_view"]

# (name, its accounting, its FLOPs stack, the FLOPs at each --seq-len, or () without one)
ComparedModel = tuple[str, ModelParams, LayerStack, tuple[FlopsAtLength, ...]]


def _d_ff_ratio(m: ModelParams) -> float:
    """d_ff / d_model of the FFN most layers run: an expert's width for MoE models."""
    s = m.spec
    ffn = s.moe_ffn if s.moe_ffn is not None and len(s.moe_layers) * 2 >= len(s.ffn_layers) else s.dense_ffn or s.moe_ffn
    assert ffn is not None
    return ffn.hidden / s.d_model


def _heads(m: ModelParams) -> str:
    """Query / key-value heads, or MLA's heads over one shared latent."""
    a = m.spec.attention
    return f"{a.n_heads} MLA" if a.kind == "MLA" else f"{a.n_heads}/{a.n_kv_heads}"


def _sig3(value: float) -> str:
    """Three significant digits, trailing zeros kept (4.30 G beside 8.03 G)."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:#.3g}".rstrip(".") + f" {prefix}"
    return f"{value:#.3g}".rstrip(".")


def _row(name: str, m: ModelParams, stack: LayerStack, rows: tuple[FlopsAtLength, ...], dtype: str) -> dict[str, Any]:
    a = m.spec.attention
    data: dict[str, Any] = {
        "name": name,
        "model_type": m.spec.model_type,
        "total_params": m.total_params,
        "active_params": m.active_params,  # the most where zero-computation experts make it a range
        **({"least_active_params": m.least_active_params, "mean_active_params": m.mean_active_params} if m.spec.zero_experts else {}),
        "vision_params": m.vision_params,
        "weights_bytes": m.weight_bytes(dtype),
        "dtype": dtype,
        "matmul_flops_per_token": m.matmul_flops_per_token,
        "ffn_share": m.ffn_share,
        "ffn_attention_ratio": m.ffn_attention_ratio,
        "d_ff_over_d_model": _d_ff_ratio(m),
        "n_layers": m.spec.n_layers,
        "d_model": m.spec.d_model,
        "attention_kind": a.kind,
        "n_heads": a.n_heads,
        "n_kv_heads": a.n_kv_heads,
        "vocab_size": m.spec.vocab_size,
    }
    if rows:
        data["crossover_seq_len"] = stack.crossover()
        data["ffn_flops_share"] = {str(r.seq_len): r.ffn_share for r in rows}
    return data


def model_comparison_data(models: list[ComparedModel], dtype: str) -> dict[str, Any]:
    return {"models": [_row(*m, dtype) for m in models]}


def model_comparison_view(models: list[ComparedModel], dtype: str) -> RenderableType:
    data = [_row(*m, dtype) for m in models]
    columns = [Col(_("model"), "text", floor=16), Col(_("total")), Col(_("active"), drop=8)]
    columns += [Col(_("weights {dtype}").format(dtype=dtype), drop=6), Col(_("FFN %"))]
    columns += [Col(_("FFN/attn"), drop=7), Col(_("FLOPs/token"), drop=9), Col("d_model", drop=5), Col(_("heads"), "fixed", drop=4)]
    columns += [Col("d_ff/d", drop=3), Col(_("layers"), drop=2), Col(_("vocab"), drop=1)]
    rows = []
    for d, (_name, m, _stack, _rows) in zip(data, models, strict=True):
        rows.append(
            [
                literal(d["name"]),
                _sig3(d["total_params"]) + ("*" if d["vision_params"] else ""),
                _sig3(d["active_params"]),
                fmt_bytes(d["weights_bytes"]),
                f"{100 * d['ffn_share']:.1f}%",
                f"{d['ffn_attention_ratio']:.2f}×",
                _sig3(d["matmul_flops_per_token"]),
                fmt_count(d["d_model"]),
                _heads(m),
                f"{d['d_ff_over_d_model']:.2f}",
                str(d["n_layers"]),
                fmt_count(d["vocab_size"]),
            ]
        )
    parts: list[RenderableType] = [table(_("models side by side: parameters"), columns, rows)]
    notes = [
        _(
            "FFN %: share of all parameters · FFN/attn: over token-mixing parameters (attention, and a hybrid's other mixers) · "
            "FLOPs/token: forward matmuls of one token's active path and the LM head, attention scores left out · "
            "heads: query/key-value · d_ff/d: an expert's for MoE"
        )
    ]
    tower = _("* {name}: the total includes its {towers}, {params}; its active count does not")
    encoder = _("* {name}: the total includes its encoder, {params}, run once a source; its active count does not")
    for d, (_name, m, _stack, _rows) in zip(data, models, strict=True):
        if d["vision_params"]:  # an encoder-decoder's encoder, or a tower (an omni model's, its towers and speech output)
            said = encoder if m.spec.vision is not None and m.spec.vision.is_encoder else tower
            notes.append(said.format(name=visible(d["name"]), params=_sig3(d["vision_params"]), towers=_(towers_words(m.spec))))
    ranged = _("{name}: its active count is the most, every pick a real expert; {least} at least, {mean} on average "
               "(zero-computation experts)")  # fmt: skip
    notes += [
        ranged.format(name=visible(d["name"]), least=_sig3(d["least_active_params"]), mean=_sig3(d["mean_active_params"]))
        for d in data
        if "mean_active_params" in d
    ]
    parts += [Wide(Text(note, style="dim")) for note in notes]  # Chinese breaks between its characters
    if models[0][3]:
        parts += [Text(""), _flops_table(data, models)]
    return Group(*parts)


def _flops_table(data: list[dict[str, Any]], models: list[ComparedModel]) -> RenderableType:
    lengths = [r.seq_len for r in models[0][3]]
    columns = [Col(_("model"), "fixed"), *(Col(_length(n)) for n in lengths), Col(_("crossover"))]
    rows = []
    for d in data:
        cross = d["crossover_seq_len"]
        shares = [f"{100 * d['ffn_flops_share'][str(n)]:.1f}%" for n in lengths]
        rows.append([literal(d["name"]), *shares, fmt_count(cross) if cross else _("never")])
    note = Text(
        _(
            "the FFN's share of forward matmul FLOPs per token at each seq_len (embeddings and LM head left out); "
            "crossover: the seq_len at which attention's FLOPs overtake the FFN's"
        ),
        style="dim",
    )
    return Group(table(_("models side by side: FFN share of FLOPs"), columns, rows), note)


def _length(n: int) -> str:
    """4096 → '4K', 131072 → '128K', 1000 → '1,000': context lengths as they are usually named."""
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else fmt_count(n)
