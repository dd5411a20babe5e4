"""Variants side by side in `ffn params`: one row each beside one attention, optionally with
every d_ff sized to the first variant's parameter count (--match-params)."""

from __future__ import annotations

from typing import Any

from ffn_cli.i18n import _, shown
from ffn_cli.models.comparison import Comparison
from ffn_cli.models.layer import BACKWARD_FACTOR, attention_summary
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_bytes, fmt_count, fmt_flops, fmt_si
from ffn_cli.render.params.common import ratio, table
from ffn_cli.render.params.report import expert_layout, ffn_report_data

__all__ = ["comparison_data", "comparison_table"]


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
    # An active column where some variant routes between experts (one FFN's would repeat its total).
    active = any(expert_layout(r) is not None for r in c.reports)
    columns = [Col(_("variant"), "text"), Col("d_ff"), Col(_("params")), *([Col(_("active"), drop=4)] if active else [])]
    columns += [
        Col(_("fwd FLOPs"), drop=3),
        Col(_("act. mem"), drop=1),
        Col(_("FFN/attn"), drop=2),
        *([Col(_("Δ params"))] if c.target_params is not None else []),
    ]
    rows = []
    for r in c.reports:
        cells = [r.spec.variant, fmt_count(r.spec.hidden), fmt_si(r.total_params, digits=4)]
        cells += [fmt_si(r.active_params, digits=4)] if active else []
        cells += [fmt_flops(r.forward_flops), fmt_bytes(r.activation_bytes), ratio(r.ffn_attention_ratio)]
        delta = c.delta(r)
        cells += [f"{100 * delta:+.2f}%"] if delta is not None else []
        rows.append(cells)
    return table(title, columns, rows, caption=caption)
