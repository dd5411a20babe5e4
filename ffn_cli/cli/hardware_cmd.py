"""`ffn hardware`: the GPU table with its dense peaks, bandwidth and memory, and this CPU as
measured, or a profile of this device (--measure). The request is checked, services/hardware.py
answers it and render/presenters/hardware.py shows it; torch loads only to measure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ffn_cli.cli.common import console, emit_json, handles_errors
from ffn_cli.cli.hardware_options import GPUOpt
from ffn_cli.cli.options import JsonOpt
from ffn_cli.cli.progress import with_progress
from ffn_cli.i18n import _
from ffn_cli.requests.hardware import HardwareRequest  # each option's default is the request's

if TYPE_CHECKING:  # the hardware tables load when the command runs, not when `ffn --help` lists it
    from ffn_cli.services.results import DeviceProfiled, GPUTable

MeasureCPUOpt = Annotated[
    bool,
    typer.Option("--measure-cpu", help="Also measure this CPU's GEMM rate and copy bandwidth (as ffn bench --calibrate; a few seconds)."),
]
MeasureOpt = Annotated[
    bool,
    typer.Option(
        "--measure",
        help="Measure this device (CUDA when present, else the CPU): GEMMs over a grid of shapes, elementwise ops, copy, "
        "fixed costs; saved as the profile `this` that --gpu this reads (under a minute on a CPU).",
    ),
]
QuickOpt = Annotated[bool, typer.Option("--quick", help="With --measure: a smaller grid, one dtype (a few seconds).")]
ThreadsOpt = Annotated[int | None, typer.Option("--threads", help="With --measure: CPU threads (torch.set_num_threads); default: torch's.")]
CPUDTypeOpt = Annotated[str, typer.Option("--dtype", help="The dtype of the measured CPU GEMM: float32 or bfloat16.")]


@handles_errors
def hardware(
    gpu: GPUOpt = HardwareRequest.gpu,
    measure: MeasureOpt = HardwareRequest.measure,
    quick: QuickOpt = HardwareRequest.quick,
    threads: ThreadsOpt = HardwareRequest.threads,
    measure_cpu: MeasureCPUOpt = HardwareRequest.measure_cpu,
    dtype: CPUDTypeOpt = HardwareRequest.dtype,
    json: JsonOpt = False,
) -> None:
    """The GPUs ffn knows: memory, bandwidth and DENSE peak per dtype, each from a datasheet (docs/hardware.md).

    --gpu NAME shows one; --measure-cpu adds this machine's CPU as measured; --measure profiles
    this device for --gpu this.
    """
    from ffn_cli.render.presenters.hardware import present

    # One request field per option, by the same name (tests/test_declarations.py holds them so).
    request = HardwareRequest(gpu=gpu, measure=measure, quick=quick, threads=threads, measure_cpu=measure_cpu, dtype=dtype)
    presented = present(_answer(request))
    if json:
        emit_json(presented.data())
    else:
        console.print(presented.view())


def _answer(request: HardwareRequest) -> GPUTable | DeviceProfiled:
    """The service's answer; a profile measured with a transient progress line on a terminal's
    stderr (cli/progress.py), which redraws only between measurements, never while one runs."""
    from ffn_cli.services.hardware import hardware as answer_hardware

    if not request.measure:  # nothing to wait on
        return answer_hardware(request)
    return with_progress(lambda on_progress: answer_hardware(request, on_progress), _("measuring"))
