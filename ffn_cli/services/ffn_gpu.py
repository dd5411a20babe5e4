"""`ffn params --variant V -d D --gpu NAME`: one FFN's forward on a GPU of the table or on the
measured profile `this`, without a model around it: the roofline and, on `this`, the forecast."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from ffn_cli.render import json_data
from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.services.answer import Answer
from ffn_cli.services.costs import cost_options, missing_rate, pass_cases

if TYPE_CHECKING:
    from ffn_cli.requests.params import ParamsRequest

__all__ = ["ffn_on_gpu"]


def ffn_on_gpu(request: ParamsRequest) -> Answer:
    from ffn_cli.accounting import DTYPE_BYTES
    from ffn_cli.attention import AttentionSpec
    from ffn_cli.costs.roofline.one_ffn import ffn_passes
    from ffn_cli.hardware.dtypes import TABLE_DTYPE
    from ffn_cli.models.layer import ffn_report
    from ffn_cli.render.prediction import ffn_roofline_view

    spec, run_dtype = request.specs[0], request.count_dtype
    gpu = resolve_gpu(str(request.gpu))
    column = TABLE_DTYPE.get(run_dtype, run_dtype)
    missing = missing_rate(gpu, column, str(request.gpu), tuple(TABLE_DTYPE))
    # The value is the FFN's report (the Python API's result); its roofline is in the view and the data.
    report = ffn_report(spec, AttentionSpec(spec.d_model), run_dtype)
    if missing is not None:  # a row without rates: the counts, and one line in place of the roofline
        return Answer(report, lambda: Text(missing, style="yellow"), lambda: json_data.ffn_gpu_data(report, None, gpu, column))
    passes = ffn_passes(spec, pass_cases(cost_options(request), DTYPE_BYTES[run_dtype]), gpu.key, run_dtype)
    return Answer(report, lambda: ffn_roofline_view(passes, gpu, column), lambda: json_data.ffn_gpu_data(report, passes, gpu, column))
