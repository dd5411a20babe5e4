"""One FFN's `ffn params` report: every tensor, its FLOPs and activation memory per token, and
the FFN beside its attention; a mixture adds what one token runs through, as its variant says."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType

from ffn_cli.accounting import DTYPE_BYTES
from ffn_cli.i18n import _, shown
from ffn_cli.models.layer import BACKWARD_FACTOR, FFNReport, attention_formula, attention_summary
from ffn_cli.render.fit import LABEL_FLOOR, Col, FitTable
from ffn_cli.render.format import fmt_bytes, fmt_count, fmt_flops, fmt_shape
from ffn_cli.render.params.common import attention_data, pct, ratio, share, table

if TYPE_CHECKING:
    from ffn_cli.variants.base import ExpertLayout

__all__ = ["expert_layout", "ffn_report_data", "ffn_report_view"]


def expert_layout(r: FFNReport) -> ExpertLayout | None:
    """The experts the report's FFN routes between, as its variant describes them; None for one
    FFN, which runs whole (the report prints no active count beside its total)."""
    return r.spec.info.expert_layout(r.spec)


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
                "share": share(t.count, r.total_params),
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
        "attention": attention_data(r.attention),
        "attention_params": r.attention_params,
        "ffn_attention_ratio": r.ffn_attention_ratio,
        "ffn_share_of_block": r.ffn_share_of_block,
    }
    if expert_layout(r) is not None:
        data["ffn_active_attention_ratio"] = r.ffn_active_attention_ratio
        data["all_experts_flops_per_token"] = r.all_experts_flops
    return data


def _spec_title(r: FFNReport) -> str:
    s, layout = r.spec, expert_layout(r)
    text = f"{s.variant} FFN · d_model {s.d_model:,} · d_ff {s.hidden:,}"
    if layout is not None:
        text += f" · {layout.experts} × {layout.expert_variant}" + (f", top-{layout.top_k}" if layout.top_k is not None else "")
        if layout.shared_hidden:
            text += _(" + shared {d_ff}").format(d_ff=f"{layout.shared_hidden:,}")
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
        rows.append([*cells, fmt_count(t.count), pct(t.count, r.total_params), fmt_bytes(t.count * width)])
    rows.append(None)
    total = f"[bold]{_('total')}[/]"
    rows.append([total, "", *([""] if copies else []), f"[bold]{fmt_count(r.total_params)}[/]", "100%", fmt_bytes(r.bytes)])
    return table(_spec_title(r), columns, rows)


def _active_path(layout: ExpertLayout) -> str:
    """What of a mixture one token runs through, in words."""
    if layout.top_k is None:
        return _("every expert runs")
    return _("router, k experts, shared experts") if layout.shared_hidden else _("router, k experts")


def _summary_table(r: FFNReport) -> FitTable:
    layout = expert_layout(r)
    rows: list[Any] = [[_("parameters"), fmt_count(r.total_params), r.param_formula]]
    if layout is not None:
        how = f"{pct(r.active_params, r.total_params)}: {_active_path(layout)}"
        rows.append([_("active per token"), fmt_count(r.active_params), how])
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
    attention = f"{shown(attention_formula(r.attention))}{_('; ')}{shown(attention_summary(r.attention))}"
    rows.append([_("attention"), fmt_count(r.attention_params), attention])
    said = _("parameters")
    if layout is not None:  # beside the number, not in its cell (as a model's summary says it)
        said += _("; active {ratio}").format(ratio=ratio(r.ffn_active_attention_ratio))
    rows.append([_("FFN / attention"), ratio(r.ffn_attention_ratio), said])
    rows.append([_("FFN share of block"), pct(r.total_params, r.total_params + r.attention_params), _("FFN / (FFN + attention)")])
    columns = [Col("what", "text", floor=LABEL_FLOOR), Col("value"), Col("how", "text")]
    return table(_("per token, and beside attention"), columns, rows, show_header=False)


def ffn_report_view(r: FFNReport) -> RenderableType:
    return Group(_tensor_table(r), _summary_table(r))
