"""The presenters of `ffn params`'s whole-model results: the presets, a model built by
transformers and counted, models side by side, and one model with what it costs."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.i18n import _, shown
from ffn_cli.render.built import built_data, built_view, layout_data, layout_view
from ffn_cli.render.fit import Wide
from ffn_cli.render.model_compare import model_comparison_data, model_comparison_view
from ffn_cli.render.params.model import model_data, model_view
from ffn_cli.render.params.presets import presets_data, presets_table
from ffn_cli.render.presenters import Presented, stacked
from ffn_cli.render.presenters.asked import explain_block_view, explained, over_lengths
from ffn_cli.render.presenters.costs import costs_data, costs_views
from ffn_cli.render.seq_flops import seq_flops_view
from ffn_cli.services.results import BuiltCount, ModelParamsAnswer, ModelsCompared, PresetList

__all__ = ["present_model"]


def present_model(result: PresetList | BuiltCount | ModelsCompared | ModelParamsAnswer) -> Presented:
    """The view and the `--json` of a whole-model result."""
    match result:
        case PresetList():
            return Presented(lambda: _presets_view(result), lambda: _presets_data(result))
        case BuiltCount():
            return Presented(lambda: _built_view(result), lambda: _built_data(result))
        case ModelsCompared():
            return Presented(lambda: _models_view(result), lambda: _models_data(result))
        case ModelParamsAnswer():
            return Presented(lambda: _model_view(result), lambda: _model_data(result))


def _presets_view(r: PresetList) -> RenderableType:
    return presets_table(r.models)


def _presets_data(r: PresetList) -> list[dict[str, Any]]:
    return presets_data(r.models)


def _built_view(r: BuiltCount) -> RenderableType:
    return built_view(r.built, r.dtype)


def _built_data(r: BuiltCount) -> dict[str, Any]:
    return built_data(r.built, r.dtype)


def _models_view(r: ModelsCompared) -> RenderableType:
    """The models side by side, then what a laid-out one leaves out, as its own answer says it."""
    said = [Wide(Text(_("left out: {what}").format(what=shown(what)), style="yellow")) for what in r.left_out]
    said += [Wide(Text(_("note: {note}").format(note=shown(note)), style="dim")) for note in r.notes]
    return Group(model_comparison_view(r.compared, r.dtype), *said)


def _models_data(r: ModelsCompared) -> dict[str, Any]:
    data = model_comparison_data(r.compared, r.dtype)
    return data | ({"left_out": list(r.left_out)} if r.left_out else {}) | ({"notes": list(r.notes)} if r.notes else {})


def _model_view(r: ModelParamsAnswer) -> RenderableType:
    over = seq_flops_view(r.stack, r.rows, _("{n} layers").format(n=r.counted.spec.n_layers)) if r.rows else None
    stored = r.costs.weights.stored if r.costs.weights is not None else None
    summary = model_view(r.counted, r.dtype, stored.bytes_ if stored else None, stored.plan.asked if stored else "")
    view = stacked(summary, over, *costs_views(r.costs), explain_block_view(r.block))
    return view if r.layout is None else stacked(layout_view(r.layout), view)


def _model_data(r: ModelParamsAnswer) -> dict[str, Any]:
    """One whole model: its counts, FLOPs over --seq-len, what it costs, --explain; the layout
    read from built layers last."""
    data = model_data(r.counted, r.dtype) | over_lengths(r.stack, r.rows) | costs_data(r.costs) | explained(r.block)
    return data if r.layout is None else {**data, "layout": layout_data(r.layout)}
