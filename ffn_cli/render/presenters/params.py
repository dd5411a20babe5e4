"""The presenters of `ffn params`'s results (services/results.py), one per result type, and
`present(result)`, which picks the result's own.

The imports inside functions keep `ffn params` of one FFN to the renderers it prints with
(tests/test_cli_startup.py): each presenter loads its own tables when its result is shown."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.i18n import _, shown
from ffn_cli.render.fit import Wide
from ffn_cli.render.params.report import ffn_report_data, ffn_report_view
from ffn_cli.render.presenters import Presented, stacked
from ffn_cli.services.results import (
    BuiltCount,
    FFNOnGPU,
    FFNParams,
    ModelParamsAnswer,
    ModelsCompared,
    ParamsResult,
    PresetList,
    RanksHeld,
    VariantsCompared,
)

__all__ = ["present"]


def present(result: ParamsResult) -> Presented:
    """The view and the `--json` of any of `ffn params`'s results."""
    match result:
        case FFNParams():
            return Presented(lambda: _ffn_view(result), lambda: _ffn_data(result))
        case FFNOnGPU():
            return Presented(lambda: _ffn_gpu_view(result), lambda: _ffn_gpu_data(result))
        case VariantsCompared():
            return Presented(lambda: _variants_view(result), lambda: _variants_data(result))
        case RanksHeld():
            return Presented(lambda: _ranks_view(result), lambda: _ranks_data(result))
        case PresetList():
            return Presented(lambda: _presets_view(result), lambda: _presets_data(result))
        case BuiltCount():
            return Presented(lambda: _built_view(result), lambda: _built_data(result))
        case ModelsCompared():
            return Presented(lambda: _models_view(result), lambda: _models_data(result))
        case ModelParamsAnswer():
            return Presented(lambda: _model_view(result), lambda: _model_data(result))
    raise TypeError(f"no presenter for {type(result).__name__}")


# --- one FFN ---------------------------------------------------------------------------------------


def _explain_view(block: Any) -> RenderableType | None:
    if block is None:
        return None
    from ffn_cli.render.params.explain import explain_view

    return explain_view(block)


def _explained(block: Any) -> dict[str, Any]:
    return {"explain": block.data()} if block is not None else {}


def _over_lengths(stack: Any, rows: Any) -> dict[str, Any]:
    from ffn_cli.render.seq_flops import seq_flops_data

    return {"flops_over_seq_len": seq_flops_data(stack, rows)} if rows else {}


def _ffn_view(r: FFNParams) -> RenderableType:
    over = None
    if r.over is not None:
        from ffn_cli.render.seq_flops import seq_flops_view

        over = seq_flops_view(*r.over, _("one layer"))
    return stacked(ffn_report_view(r.report), over, _explain_view(r.block))


def _ffn_data(r: FFNParams) -> dict[str, Any]:
    return ffn_report_data(r.report) | (_over_lengths(*r.over) if r.over is not None else {}) | _explained(r.block)


def _ffn_gpu_view(r: FFNOnGPU) -> RenderableType:
    if r.passes is None:  # a row without rates: one line in place of the roofline
        return Text(str(r.missing), style="yellow")
    from ffn_cli.render.prediction import ffn_roofline_view

    return ffn_roofline_view(r.passes, r.gpu, r.column)


def _ffn_gpu_data(r: FFNOnGPU) -> dict[str, Any]:
    """The FFN's counts and its roofline; on a row with no peak rate, a null roofline and the
    row's notes, which say why."""
    if r.passes is None:
        return ffn_report_data(r.report) | {"roofline": None, "roofline_missing": "; ".join(r.gpu.notes)}
    from ffn_cli.render.prediction import ffn_roofline_data

    return ffn_report_data(r.report) | {"roofline": ffn_roofline_data(r.passes, r.gpu, r.column)}


def _variants_view(r: VariantsCompared) -> RenderableType:
    from ffn_cli.render.params.comparison import comparison_table

    lines = [Wide(Text(_("warning: {message}").format(message=shown(w)), style="yellow")) for w in r.warnings]
    return Group(comparison_table(r.comparison), *lines)


def _variants_data(r: VariantsCompared) -> dict[str, Any]:
    from ffn_cli.render.params.comparison import comparison_data

    return comparison_data(r.comparison) | {"warnings": r.warnings}


def _ranks_view(r: RanksHeld) -> RenderableType:
    from ffn_cli.render.parallel import render_rank_params

    return render_rank_params(r.spec, r.ranks)


def _ranks_data(r: RanksHeld) -> dict[str, Any]:
    from ffn_cli.accounting import total_params
    from ffn_cli.render.parallel import rank_params_json

    return rank_params_json(r.spec, r.ranks) | {"total_params": total_params(r.spec)}


# --- whole models ----------------------------------------------------------------------------------


def _presets_view(r: PresetList) -> RenderableType:
    from ffn_cli.render.params.presets import presets_table

    return presets_table(r.models)


def _presets_data(r: PresetList) -> list[dict[str, Any]]:
    from ffn_cli.render.params.presets import presets_data

    return presets_data(r.models)


def _built_view(r: BuiltCount) -> RenderableType:
    from ffn_cli.render.built import built_view

    return built_view(r.built, r.dtype)


def _built_data(r: BuiltCount) -> dict[str, Any]:
    from ffn_cli.render.built import built_data

    return built_data(r.built, r.dtype)


def _models_view(r: ModelsCompared) -> RenderableType:
    from ffn_cli.render.model_compare import model_comparison_view

    return model_comparison_view(r.compared, r.dtype)


def _models_data(r: ModelsCompared) -> dict[str, Any]:
    from ffn_cli.render.model_compare import model_comparison_data

    return model_comparison_data(r.compared, r.dtype)


def _model_view(r: ModelParamsAnswer) -> RenderableType:
    from ffn_cli.render.built import layout_view
    from ffn_cli.render.params.model import model_view
    from ffn_cli.render.presenters.costs import costs_views
    from ffn_cli.render.seq_flops import seq_flops_view

    over = seq_flops_view(r.stack, r.rows, _("{n} layers").format(n=r.counted.spec.n_layers)) if r.rows else None
    view = stacked(model_view(r.counted, r.dtype), over, *costs_views(r.costs), _explain_view(r.block))
    return view if r.layout is None else stacked(layout_view(r.layout), view)


def _model_data(r: ModelParamsAnswer) -> dict[str, Any]:
    """One whole model: its counts, FLOPs over --seq-len, what it costs, --explain; the layout
    read from built layers last."""
    from ffn_cli.render.built import layout_data
    from ffn_cli.render.params.model import model_data
    from ffn_cli.render.presenters.costs import costs_data

    data = model_data(r.counted, r.dtype) | _over_lengths(r.stack, r.rows) | costs_data(r.costs) | _explained(r.block)
    return data if r.layout is None else {**data, "layout": layout_data(r.layout)}
