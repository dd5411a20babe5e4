"""`ffn params` results as rich tables or JSON-ready dicts, from the same dataclasses, so the
table and `--json` cannot disagree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.accounting import DTYPE_BYTES
from ffn_cli.attention import AnyAttention
from ffn_cli.i18n import Message, _, shown
from ffn_cli.models.layer import BACKWARD_FACTOR, Comparison, FFNReport, attention_formula, attention_summary
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_bytes, fmt_count, fmt_flops, fmt_shape, fmt_si
from ffn_cli.render.literal import literal, visible

if TYPE_CHECKING:
    from ffn_cli.models.count import ModelParams, TrainingMemory

__all__ = [
    "comparison_data",
    "comparison_table",
    "ffn_report_data",
    "ffn_report_view",
    "memory_rows",
    "model_data",
    "model_view",
    "presets_data",
    "presets_table",
]

# Weight memory is shown for these; JSON carries every dtype the accounting knows.
_SHOWN_DTYPES = ("float32", "bfloat16", "float8")


def _table(title: str, columns: list[Col], rows: list[Any], **options: Any) -> FitTable:
    """A compact table (header rule, no vertical borders) fitted to the terminal's width."""
    return FitTable(title, columns, rows, **options)


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def _share(part: int, whole: int) -> float | None:
    """part / whole, the fraction the tables print in percent."""
    return part / whole if whole else None


def _ratio(value: float) -> str:
    return f"{value:.3f}×" if value < 10 else f"{value:.2f}×"


def _attention_data(a: AnyAttention) -> dict[str, Any]:
    return a.shape_data() | {
        "n_heads": a.n_heads,
        "n_kv_heads": a.n_kv_heads,
        "head_dim": a.head_dim,
        "qkv_bias": a.qkv_bias,
        "o_bias": a.o_bias,
        "params": a.params,
        "param_formula": attention_formula(a),
        "projection_flops_per_token": a.projection_flops_per_token(),
    }


# --- one FFN ------------------------------------------------------------------------------


def ffn_report_data(r: FFNReport) -> dict[str, Any]:
    width = DTYPE_BYTES[r.dtype]
    data: dict[str, Any] = {
        "spec": r.spec.as_dict(),
        "dtype": r.dtype,
        "tensors": [
            {
                "name": t.name,
                "shape": list(t.shape),
                "copies": t.copies,
                "count": t.count,
                "bytes": t.count * width,
                "share": _share(t.count, r.total_params),
            }
            for t in r.tensors
        ],
        "total_params": r.total_params,
        "active_params": r.active_params,
        "param_formula": r.param_formula,
        "bytes": r.bytes,
        "flops_per_token": r.forward_flops,
        "matmul_flops_per_token": r.matmul_flops,
        "elementwise_flops_per_token": r.elementwise_flops,
        "matmul_flops_formula": r.matmul_formula,
        "training_flops_per_token": r.training_flops,
        "steps": [
            {"name": s.name, "matmul_flops": s.matmul_flops, "elementwise_flops": s.elementwise_flops, "formula": s.formula}
            for s in r.steps
        ],
        "activation_elements_per_token": r.activation_elements,
        "activation_bytes_per_token": r.activation_bytes,
        "attention": _attention_data(r.attention),
        "attention_params": r.attention_params,
        "ffn_attention_ratio": r.ffn_attention_ratio,
        "ffn_share_of_block": r.ffn_share_of_block,
    }
    if r.spec.is_moe:
        data["ffn_active_attention_ratio"] = r.ffn_active_attention_ratio
        data["all_experts_flops_per_token"] = r.all_experts_flops
    return data


def _word(text: str) -> str:
    """A name the accounting marked with N_() (or built as a Message), in the current language."""
    return shown(text) if isinstance(text, Message) else _(text)


def _spec_title(r: FFNReport) -> str:
    s = r.spec
    text = f"{s.variant} FFN · d_model {s.d_model:,} · d_ff {s.hidden:,}"
    if s.is_moe:
        routed = s.mixture is not None and s.mixture.is_routed
        text += f" · {s.experts} × {s.expert_variant}, top-{s.top_k}" if routed else f" · {s.experts} × {s.expert_variant}"
        if s.shared_hidden:
            text += _(" + shared {d_ff}").format(d_ff=f"{s.shared_hidden:,}")
    return text + f" · {_('biases') if s.bias else _('no bias')} · {r.dtype}"


def _tensor_table(r: FFNReport) -> FitTable:
    copies = any(t.copies > 1 for t in r.tensors)
    columns = [
        Col(_("tensor"), "text"),
        Col(_("shape"), "fixed", drop=2),
        *([Col("×")] if copies else []),
        Col(_("params")),
        Col("%", drop=1),
        Col(_("bytes"), drop=3),
    ]
    width = DTYPE_BYTES[r.dtype]
    rows: list[Any] = []
    for t in r.tensors:
        cells = [t.name, fmt_shape(t.shape), *([str(t.copies)] if copies else [])]
        rows.append([*cells, fmt_count(t.count), _pct(t.count, r.total_params), fmt_bytes(t.count * width)])
    rows.append(None)
    total = f"[bold]{_('total')}[/]"
    rows.append([total, "", *([""] if copies else []), f"[bold]{fmt_count(r.total_params)}[/]", "100%", fmt_bytes(r.bytes)])
    return _table(_spec_title(r), columns, rows)


def _summary_table(r: FFNReport) -> FitTable:
    rows: list[Any] = [[_("parameters"), fmt_count(r.total_params), r.param_formula]]
    if r.spec.is_moe:
        routed = r.spec.mixture is not None and r.spec.mixture.is_routed
        if routed:
            active = _("router, k experts, shared experts") if r.spec.shared_hidden else _("router, k experts")
        else:
            active = _("every expert runs")
        rows.append([_("active per token"), fmt_count(r.active_params), f"{_pct(r.active_params, r.total_params)}: {active}"])
    elementwise = _("matmul {matmul} ({formula}) + elementwise {elementwise}").format(
        matmul=fmt_count(r.matmul_flops), formula=r.matmul_formula, elementwise=fmt_count(r.elementwise_flops)
    )
    rows.append([_("forward FLOPs"), fmt_count(r.forward_flops), elementwise])
    backward = _("{factor} × forward ({flops})").format(factor=BACKWARD_FACTOR, flops=fmt_flops(r.training_flops))
    rows.append([_("forward + backward"), fmt_count(r.training_flops), backward])
    if r.all_experts_flops is not None:
        times = _("{times} × the routed forward").format(times=f"{r.all_experts_flops / r.forward_flops:.2f}")
        rows.append([_("if every expert ran"), fmt_count(r.all_experts_flops), times])
    kept = _("{n} elements in {dtype}, for backward").format(n=fmt_count(r.activation_elements), dtype=r.dtype)
    rows.append([_("activations kept"), fmt_bytes(r.activation_bytes), kept])
    rows.append(None)
    attention = f"{attention_formula(r.attention)}{_('; ')}{shown(attention_summary(r.attention))}"
    rows.append([_("attention"), fmt_count(r.attention_params), attention])
    ratio = _ratio(r.ffn_attention_ratio) + (
        _(" (active {ratio})").format(ratio=_ratio(r.ffn_active_attention_ratio)) if r.spec.is_moe else ""
    )
    rows.append([_("FFN / attention"), ratio, _("parameters")])
    rows.append([_("FFN share of block"), _pct(r.total_params, r.total_params + r.attention_params), _("FFN / (FFN + attention)")])
    columns = [Col("what", "text"), Col("value"), Col("how", "text")]
    return _table(_("per token, and beside attention"), columns, rows, show_header=False)


def ffn_report_view(r: FFNReport) -> RenderableType:
    return Group(_tensor_table(r), _summary_table(r))


# --- variants side by side ----------------------------------------------------------------


def comparison_data(c: Comparison) -> dict[str, Any]:
    rows = []
    for r in c.reports:
        row = ffn_report_data(r)
        if c.target_params is not None:
            row["match_delta"] = c.delta(r)
        rows.append(row)
    return {"dtype": c.reports[0].dtype, "match_params": c.target_params is not None, "target_params": c.target_params, "variants": rows}


def comparison_table(c: Comparison) -> FitTable:
    first = c.reports[0]
    attention = f"{fmt_count(first.attention_params)} ({shown(attention_summary(first.attention))})"
    title = _("FFN variants · d_model {d_model} · beside attention {attention}").format(
        d_model=f"{first.spec.d_model:,}", attention=attention
    )
    if c.target_params is not None:
        title += _(" · d_ff sized to {variant}'s {params} parameters").format(variant=first.spec.variant, params=fmt_count(c.target_params))
    caption = _("FLOPs and activations per token, {dtype}; forward + backward ≈ {factor} × forward").format(
        dtype=first.dtype, factor=BACKWARD_FACTOR
    )
    moe = any(r.spec.is_moe for r in c.reports)
    columns = [Col(_("variant"), "text"), Col("d_ff"), Col(_("params")), *([Col(_("active"), drop=4)] if moe else [])]
    columns += [
        Col(_("fwd FLOPs"), drop=3),
        Col(_("act. mem"), drop=1),
        Col(_("FFN/attn"), drop=2),
        *([Col(_("Δ params"))] if c.target_params is not None else []),
    ]
    rows = []
    for r in c.reports:
        cells = [r.spec.variant, fmt_count(r.spec.hidden), fmt_si(r.total_params, digits=4)]
        cells += [fmt_si(r.active_params, digits=4)] if moe else []
        cells += [fmt_flops(r.forward_flops), fmt_bytes(r.activation_bytes), _ratio(r.ffn_attention_ratio)]
        delta = c.delta(r)
        cells += [f"{100 * delta:+.2f}%"] if delta is not None else []
        rows.append(cells)
    return _table(title, columns, rows, caption=caption)


# --- whole models -------------------------------------------------------------------------


def _training_data(t: TrainingMemory) -> dict[str, Any]:
    return {
        "dtype": t.dtype,
        "weights_bytes": t.weights_bytes,
        "grads_bytes": t.grads_bytes,
        "master_bytes": t.master_bytes,
        "optimizer_bytes": t.optimizer_bytes,
        "total_bytes": t.total_bytes,
    }


def model_data(m: ModelParams, dtype: str = "bfloat16") -> dict[str, Any]:
    s = m.spec
    flops = m.matmul_flops_per_token
    return {
        "model": s.name,
        "model_type": s.model_type,
        "config": {
            "d_model": s.d_model,
            "n_layers": s.n_layers,
            "vocab_size": s.vocab_size,
            "tie_word_embeddings": s.tie_word_embeddings,
            "moe_layers": list(s.moe_layers),
            "norm": s.norm,
            # Layers that are one block each (Nemotron-H), only where there are any.
            **(
                {"no_ffn_layers": list(s.no_ffn_layers), "no_mixer_layers": list(s.no_mixer_layers)}
                if s.no_ffn_layers or s.no_mixer_layers
                else {}
            ),
        },
        "attention": _attention_data(s.attention),
        "dense_ffn": s.dense_ffn.as_dict() if s.dense_ffn else None,
        "moe_ffn": s.moe_ffn.as_dict() if s.moe_ffn else None,
        "parts": [
            {
                "name": p.name,
                "kind": p.kind,
                "detail": p.detail,
                "params_each": p.params_each,
                "copies": p.copies,
                "params": p.params,
                "active_params": p.active_params,
                "share": _share(p.params, m.total_params),
            }
            for p in m.parts
        ],
        "per_layer": m.per_layer,
        "total_params": m.total_params,
        "active_params": m.active_params,
        "embedding_params": m.embedding_params,
        "non_embedding_params": m.non_embedding_params,
        "attention_params": m.attention_params,
        "ffn_params": m.ffn_params,
        "ffn_active_params": m.ffn_active_params,
        "norm_params": m.norm_params,
        "vision_params": m.vision_params,
        "text_params": m.text_params,
        "ffn_share": m.ffn_share,
        "ffn_active_share": m.ffn_active_share,
        "ffn_attention_ratio": m.ffn_attention_ratio,
        "ffn_active_attention_ratio": m.ffn_active_attention_ratio,
        "weight_bytes": {d: m.weight_bytes(d) for d in DTYPE_BYTES},
        "training_memory": _training_data(m.training_memory(dtype)),
        "matmul_flops_per_token": flops,
        "training_flops_per_token": BACKWARD_FACTOR * flops,
    }


def _parts_table(m: ModelParams) -> FitTable:
    s = m.spec
    # Text, not markup: the name comes from the config file or its folder.
    layers = _("{n} layers").format(n=s.n_layers)
    vocab = _("vocab {n}").format(n=f"{s.vocab_size:,}")
    title = Text(visible(f"{s.name} · {s.model_type} · {layers} · d_model {s.d_model:,} · {vocab}"))
    columns = [Col(_("part"), "text"), Col(_("each"), drop=2), Col("×", drop=3), Col(_("params")), Col("%", drop=1)]
    rows: list[Any] = []
    active = _("active {n}")
    for p in m.parts:
        params = fmt_count(p.params) + (f"\n[dim]{active.format(n=fmt_count(p.active_params))}[/]" if p.active_params != p.params else "")
        rows.append(
            [
                f"{literal(_word(p.name))}\n[dim]{literal(_word(p.detail))}[/]",
                fmt_count(p.params_each),
                str(p.copies),
                params,
                _pct(p.params, m.total_params),
            ]
        )
    rows.append(None)
    total = f"[bold]{fmt_count(m.total_params)}[/]"
    if s.is_moe:
        total += f"\n[dim]{active.format(n=fmt_count(m.active_params))}[/]"
    rows.append([f"[bold]{_('total')}[/]\n[dim]{_('parameters only, buffers excluded')}[/]", "", "", total, "100%"])
    return _table(title, columns, rows)


def memory_rows(params: int, dtype: str) -> list[list[str]]:
    """The weights and training-memory rows of a model summary, from its parameter total."""
    from ffn_cli.models.count import training_memory  # loaded with a model, not for one FFN

    weights = [f"{d} {fmt_bytes(params * DTYPE_BYTES[d])}" for d in _SHOWN_DTYPES]
    t = training_memory(params, dtype)
    parts = [_("weights {bytes}").format(bytes=fmt_bytes(t.weights_bytes)), _("grads {bytes}").format(bytes=fmt_bytes(t.grads_bytes))]
    parts += [_("fp32 master {bytes}").format(bytes=fmt_bytes(t.master_bytes))] if t.master_bytes else []
    parts += [_("Adam m, v {bytes}").format(bytes=fmt_bytes(t.optimizer_bytes))]
    how = _("{dtype} with Adam: {parts}; activations extra").format(dtype=dtype, parts=" + ".join(parts))
    return [
        [_("weights"), fmt_bytes(params * DTYPE_BYTES[dtype]), " · ".join(weights)],
        [_("training memory"), fmt_bytes(t.total_bytes), how],
    ]


def _model_summary(m: ModelParams, dtype: str) -> FitTable:
    rows: list[Any] = []
    of_total = _("{pct} of the total")
    if m.spec.is_moe:
        rows.append([_("active per token"), fmt_count(m.active_params), of_total.format(pct=_pct(m.active_params, m.total_params))])
    if m.vision_params:
        vision = _("included in the total ({pct}); the text model alone has {n}").format(
            pct=_pct(m.vision_params, m.total_params), n=fmt_count(m.text_params)
        )
        rows.append([_("vision tower"), fmt_count(m.vision_params), vision])
    rows.append([_("non-embedding"), fmt_count(m.non_embedding_params), _("without token/position embeddings and an untied head")])
    rows.append([_("attention"), fmt_count(m.attention_params), of_total.format(pct=_pct(m.attention_params, m.total_params))])
    ffn_how = of_total.format(pct=_pct(m.ffn_params, m.total_params))
    if m.spec.is_moe:
        ffn_how += _("; active {n} ({pct} of active)").format(
            n=fmt_count(m.ffn_active_params), pct=_pct(m.ffn_active_params, m.active_params)
        )
    rows.append(["FFN", fmt_count(m.ffn_params), ffn_how])
    ratio = _ratio(m.ffn_attention_ratio) + (
        _(" (active {ratio})").format(ratio=_ratio(m.ffn_active_attention_ratio)) if m.spec.is_moe else ""
    )
    rows.append([_("FFN / attention"), ratio, _("parameters, all layers")])
    rows.append(None)
    rows += memory_rows(m.total_params, dtype)
    flops = m.matmul_flops_per_token
    scores = _("matmuls on the active path; attention scores add 4·seq·heads·head_dim per layer")
    rows.append([_("forward FLOPs/token"), fmt_flops(flops), scores])
    rows.append([_("forward + backward"), fmt_flops(BACKWARD_FACTOR * flops), _("{factor} × forward").format(factor=BACKWARD_FACTOR)])
    return _table(_("summary"), [Col("what", "text"), Col("value"), Col("how", "text")], rows, show_header=False)


def model_view(m: ModelParams, dtype: str = "bfloat16") -> RenderableType:
    return Group(_parts_table(m), _model_summary(m, dtype))


# --- presets ------------------------------------------------------------------------------


def presets_data(models: list[tuple[str, ModelParams, str]]) -> list[dict[str, Any]]:
    """models: (preset name, its accounting, the Hub repository it describes)."""
    return [
        {
            "name": name,
            "source": source,
            "model_type": m.spec.model_type,
            "n_layers": m.spec.n_layers,
            "d_model": m.spec.d_model,
            "total_params": m.total_params,
            "active_params": m.active_params,
            "ffn_attention_ratio": m.ffn_attention_ratio,
        }
        for name, m, source in models
    ]


def presets_table(models: list[tuple[str, ModelParams, str]]) -> FitTable:
    columns = [Col(_("preset"), "text"), Col(_("total")), Col(_("active"), drop=2), Col(_("FFN/attn"), drop=1)]
    rows = []
    for row in presets_data(models):
        layers = _("{n} layers").format(n=row["n_layers"])
        name = f"{literal(row['name'])}\n[dim]{literal(row['model_type'])} · {layers} · d {row['d_model']:,}[/]"
        active = fmt_count(row["active_params"]) if row["active_params"] != row["total_params"] else ""
        rows.append([name, fmt_count(row["total_params"]), active, _ratio(row["ffn_attention_ratio"])])
    return _table(_("presets: ffn params --preset NAME"), columns, rows)
