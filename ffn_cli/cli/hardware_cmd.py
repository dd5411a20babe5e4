"""`ffn hardware`: the GPU table with its dense peaks, bandwidth and memory, and this CPU as
measured. Torch is imported only to measure the CPU (--measure-cpu)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated

import typer

from ffn_cli.cli.common import console, emit_json, err_console, handles_errors, require_temp_dir
from ffn_cli.cli.hardware_options import GPUOpt
from ffn_cli.cli.options import JsonOpt
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.requests.gpu import resolve_gpu

if TYPE_CHECKING:  # the hardware tables load when the command runs, not when `ffn --help` lists it
    from ffn_cli.hardware.cpu import MeasuredCPU

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
    gpu: GPUOpt = None,
    measure: MeasureOpt = False,
    quick: QuickOpt = False,
    threads: ThreadsOpt = None,
    measure_cpu: MeasureCPUOpt = False,
    dtype: CPUDTypeOpt = "float32",
    json: JsonOpt = False,
) -> None:
    """The GPUs ffn knows: memory, bandwidth and DENSE peak per dtype, each from a datasheet (docs/hardware.md).

    --gpu NAME shows one; --measure-cpu adds this machine's CPU as measured; --measure profiles
    this device for --gpu this.
    """
    if measure:
        if gpu is not None or measure_cpu:
            raise FFNError("measure", True, _("profiles this device alone: drop --gpu and --measure-cpu"))
        _measure(quick, threads, json)
        return
    if quick or threads is not None:
        raise FFNError("quick" if quick else "threads", quick or threads, _("sizes --measure: add --measure"))
    from ffn_cli.hardware import GPUS
    from ffn_cli.render.hardware import hardware_data, hardware_view

    if dtype not in ("float32", "bfloat16"):
        raise FFNError("dtype", dtype, _("the CPU GEMM is measured in float32 or bfloat16"))
    gpus = [resolve_gpu(gpu)] if gpu is not None else list(GPUS)
    cpu = _measure_cpu(dtype) if measure_cpu else None
    if json:
        emit_json(hardware_data(gpus, cpu))
    else:
        console.print(hardware_view(gpus, cpu))


def _measure_cpu(dtype: str) -> MeasuredCPU:
    """The calibration `ffn bench --calibrate` runs, on the CPU, as a row of the table."""
    import torch

    from ffn_cli.benchmark.calibrate import calibrate
    from ffn_cli.benchmark.config import BenchConfig
    from ffn_cli.device import resolve_device_dtype
    from ffn_cli.hardware.cpu import MeasuredCPU, cpu_memory_bytes, cpu_name

    device, torch_dtype = resolve_device_dtype("cpu", dtype)
    cal = calibrate(device, torch_dtype, dtype, BenchConfig())
    short = {"float32": "fp32", "bfloat16": "bf16"}[dtype]
    return MeasuredCPU(
        cpu_name(),
        torch.get_num_threads(),
        cpu_memory_bytes(),
        short,
        round(math.prod(cal.gemm_shape) ** (1 / 3)),
        cal.gemm_tflops,
        cal.copy_gbps,
    )


def _measure(quick: bool, threads: int | None, json: bool) -> None:
    """Profile this device with a transient progress line (redrawn between measurements only)."""
    if threads is not None and not 1 <= threads <= 4096:
        raise FFNError("threads", threads, _("an integer in [1, 4096]"))
    require_temp_dir()
    import torch

    from ffn_cli.benchmark.measure import measure_device
    from ffn_cli.hardware.profile import save_profile
    from ffn_cli.render.profile import profile_data, profile_view

    if threads is not None:
        torch.set_num_threads(threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if err_console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
            auto_refresh=False,
        ) as progress:
            task = progress.add_task(_("measuring"), total=None)

            def on_progress(done: int, total: int, what: str) -> None:
                progress.update(task, completed=done, total=total, description=what)
                progress.refresh()

            profile = measure_device(device, quick=quick, on_progress=on_progress)
    else:
        profile = measure_device(device, quick=quick)
    path = save_profile(profile)
    if json:
        emit_json(profile_data(profile, path))
    else:
        console.print(profile_view(profile, path))
