"""`ffn params --variant V -d D --gpu NAME`: one FFN's forward on a GPU of the table or on the
measured profile `this`, without a model around it: the roofline and, on `this`, the forecast."""

from __future__ import annotations

from ffn_cli.cli.common import console, emit_json, refuse_unused
from ffn_cli.cli.ffn_options import FFNOptions
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.services.costs import CostOptions, pass_cases

__all__ = ["ffn_on_gpu"]


def ffn_on_gpu(ffn: FFNOptions, costs: CostOptions, dtype: str | None, json: bool) -> None:
    from ffn_cli.accounting import DTYPE_BYTES
    from ffn_cli.hardware.dtypes import TABLE_DTYPE
    from ffn_cli.models.ffn_roofline import ffn_passes
    from ffn_cli.models.layer import check_dtype
    from ffn_cli.render.params.report import ffn_report_data
    from ffn_cli.render.prediction import ffn_roofline_data, ffn_roofline_view

    whole = _("applies to a whole model: give --preset, --config or --model")
    given = {"weights": costs.weights, "quantize": costs.quantize, "backward": costs.backward or None, "plot": costs.plot}
    refuse_unused(given | {"no_mtp": None if costs.mtp else True, "tp": costs.tp if costs.tp != 1 else None}, whole)
    refuse_unused({"ep": costs.ep if costs.ep != 1 else None}, whole)
    variants, widths = ffn.variants(), ffn.widths()
    if len(variants) != 1 or len(widths) != 1:
        raise FFNError("gpu", costs.gpu, _("times one FFN: give one --variant and one --d-model"))
    spec = ffn.spec(variants[0], widths[0], fused_gate_up=ffn.fused)
    run_dtype = check_dtype("float32" if dtype is None else dtype)
    gpu = resolve_gpu(str(costs.gpu))
    column = TABLE_DTYPE.get(run_dtype, run_dtype)
    if gpu.tflops_for(column) is None:
        why = _("{name} has no dense {column} rate in the table: choose another --dtype or GPU")
        raise FFNError("gpu", costs.gpu, why.format(name=gpu.name, column=column))
    passes = ffn_passes(spec, pass_cases(costs, DTYPE_BYTES[run_dtype]), gpu.key, run_dtype)
    if json:
        from ffn_cli.attention import AttentionSpec
        from ffn_cli.models.layer import ffn_report

        report = ffn_report(spec, AttentionSpec(spec.d_model), run_dtype)
        emit_json(ffn_report_data(report) | {"roofline": ffn_roofline_data(passes, gpu, column)})
    else:
        console.print(ffn_roofline_view(passes, gpu, column))
