"""`ffn params --variant V -d D --gpu NAME`: one FFN's forward on a GPU of the table or on the
measured profile `this`, without a model around it: the roofline and, on `this`, the forecast."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.accounting import DTYPE_BYTES
from ffn_cli.attention import AttentionSpec
from ffn_cli.costs.roofline.one_ffn import ffn_passes
from ffn_cli.hardware.dtypes import TABLE_DTYPE
from ffn_cli.models.layer import ffn_report
from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.services.costs import cost_options, missing_rate, pass_cases
from ffn_cli.services.results import FFNOnGPU

if TYPE_CHECKING:
    from ffn_cli.requests.params import ParamsRequest

__all__ = ["ffn_on_gpu"]


def ffn_on_gpu(request: ParamsRequest) -> FFNOnGPU:
    """The FFN's report and its passes on --gpu (none on a row without rates: the line in their place)."""
    spec, run_dtype = request.specs[0], request.count_dtype
    gpu = resolve_gpu(str(request.gpu))
    column = TABLE_DTYPE.get(run_dtype, run_dtype)
    missing = missing_rate(gpu, column, str(request.gpu), tuple(TABLE_DTYPE))
    report = ffn_report(spec, AttentionSpec(spec.d_model), run_dtype)
    if missing is not None:
        return FFNOnGPU(report, gpu, column, None, missing)
    passes = ffn_passes(spec, pass_cases(cost_options(request), DTYPE_BYTES[run_dtype]), gpu.key, run_dtype)
    return FFNOnGPU(report, gpu, column, passes)
