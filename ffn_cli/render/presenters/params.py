"""The presenters of `ffn params`'s results (services/results.py), one per result type, and
`present(result)`, which picks the result's own.

Whole models are presented by render/presenters/model_params.py. The imports inside functions
keep `ffn params` of one FFN to the renderers it prints with (tests/test_cli_startup.py): each
presenter loads its own tables when its result is shown."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.accounting import total_params
from ffn_cli.i18n import _, shown
from ffn_cli.render.fit import Wide
from ffn_cli.render.params.report import ffn_report_data, ffn_report_view
from ffn_cli.render.presenters import Presented, stacked
from ffn_cli.render.presenters.asked import explain_block_view, explained, over_lengths
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
        case PresetList() | BuiltCount() | ModelsCompared() | ModelParamsAnswer():
            from ffn_cli.render.presenters.model_params import present_model  # loads with a model's answer

            return present_model(result)
    raise TypeError(f"no presenter for {type(result).__name__}")


# --- one FFN ---------------------------------------------------------------------------------------


def _ffn_view(r: FFNParams) -> RenderableType:
    over = None
    if r.over is not None:
        from ffn_cli.render.seq_flops import seq_flops_view

        over = seq_flops_view(*r.over, _("one layer"))
    return stacked(ffn_report_view(r.report), over, explain_block_view(r.block))


def _ffn_data(r: FFNParams) -> dict[str, Any]:
    return ffn_report_data(r.report) | (over_lengths(*r.over) if r.over is not None else {}) | explained(r.block)


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
    from ffn_cli.render.parallel import rank_params_json

    return rank_params_json(r.spec, r.ranks) | {"total_params": total_params(r.spec)}
