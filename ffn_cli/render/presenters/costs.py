"""The presenter of a whole model's costs (services/costs.py's ModelCosts): its tables, one under
another, and its `--json` fields, in the same order."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.i18n import _
from ffn_cli.i18n import shown as in_language
from ffn_cli.render.decode_state import decode_state_data, decode_state_view
from ffn_cli.render.fit import Wide
from ffn_cli.render.literal import visible
from ffn_cli.render.prediction import add_forecasts, forecast_lines
from ffn_cli.render.rank_memory import fewest_gpus_line, rank_memory_data, rank_memory_view
from ffn_cli.render.roofline import roofline_data, roofline_view
from ffn_cli.render.weights import checkpoint_data, checkpoint_view
from ffn_cli.services.results import ModelCosts, Roofline

__all__ = ["costs_data", "costs_views"]


def costs_views(costs: ModelCosts) -> list[RenderableType]:
    """The tables the cost options asked for, in the order the command prints them."""
    shown: list[RenderableType] = []
    if costs.weights is not None:
        shown.append(checkpoint_view(costs.weights.stored, costs.weights.bf16_bytes, costs.weights.note))
    if costs.ranks is not None:
        shown.append(rank_memory_view(costs.ranks, costs.fit))
        fit = costs.fit
        if fit is not None and not fit.fits:
            shown.append(Group(fewest_gpus_line(costs.fits_at, past_limit=fit.context_limit if fit.past_limit else None)))
        if costs.left_out:
            said = [_("the verdict leaves out: {what}").format(what=in_language(what)) for what in costs.left_out]
            lines = [Wide(Text(line, style="yellow")) for line in said]
            shown.append(Group(*lines))
    if costs.roofline is not None:
        shown += _roofline_views(costs.roofline)
    elif costs.missing is not None:
        shown.append(Group(Wide(Text(costs.missing, style="yellow"))))
    if costs.decode is not None:
        d = costs.decode
        tp = costs.ranks.tp if costs.ranks is not None else 1
        shown.append(decode_state_view(d.kinds, d.seq_len, d.batches, d.act_bytes, tp=tp))
    return shown


def _roofline_views(r: Roofline) -> list[RenderableType]:
    view = roofline_view(
        r.costs,
        r.gpu,
        r.column,
        r.origin,
        r.n_layers,
        r.backward,
        r.per_gpu,
        r.real_picks,
        r.dense_layers,
        r.mtp_layers,
        r.reapplied_layers,
    )
    shown: list[RenderableType] = [view]
    if r.left_out:
        said = [_("the roofline leaves out: {what}").format(what=in_language(what)) for what in r.left_out]
        shown.append(Group(*(Wide(Text(line, style="yellow")) for line in said)))
    shown += forecast_lines(_roofline_data(r))
    if r.plot is not None:
        shown.append(Group(Text(_("plot written to {path}").format(path=visible(r.plot)), style="dim")))
    return shown


def _roofline_data(r: Roofline) -> dict[str, Any]:
    data = roofline_data(r.costs, r.gpu, r.column, r.origin, r.backward, r.per_gpu)
    if r.real_picks is not None:
        data["real_picks"] = r.real_picks
    data["ffn_one_layer_of"] = "moe" if r.costs and r.costs[0].ffn.experts else "dense"
    data["dense_ffn_layers_beside_moe"] = r.dense_layers
    data["mtp_layers_not_run"] = r.mtp_layers
    data["layers_rereading_shared_weights"] = r.reapplied_layers
    if r.left_out:
        data["left_out"] = list(r.left_out)
    add_forecasts(data, r.forecasts)
    if r.plot is not None:
        data["plot"] = str(r.plot)
    return data


def costs_data(costs: ModelCosts) -> dict[str, Any]:
    """The `--json` fields of the costs asked (none when none is asked)."""
    data: dict[str, Any] = {}
    if costs.weights is not None:
        data["checkpoint"] = checkpoint_data(costs.weights.stored, costs.weights.bf16_bytes, costs.weights.note)
    if costs.ranks is not None:
        data["per_gpu_memory"] = rank_memory_data(costs.ranks, costs.fit)
        if costs.fit is not None and not costs.fit.fits:
            at = costs.fits_at
            data["per_gpu_memory"]["fits_at"] = None if at is None else {"tp": at.tp, "ep": at.ep, "copies": at.copies, "gpus": at.gpus}
        if costs.left_out:
            data["per_gpu_memory"]["left_out"] = list(costs.left_out)
    if costs.roofline is not None:
        data["roofline"] = _roofline_data(costs.roofline)
    elif costs.missing is not None:
        data["roofline"] = None
        data["roofline_missing"] = costs.missing_notes
    if costs.decode is not None:
        d = costs.decode
        data["decode_state"] = decode_state_data(d.kinds, d.seq_len, d.batches, d.act_bytes)
    return data
