"""`ffn hardware`: the GPU table with its dense peaks, bandwidth and memory, and this CPU as
measured. Torch is imported only to measure the CPU (--measure-cpu)."""

from __future__ import annotations

import math
from typing import Annotated

import typer

from ffn_cli.cli.common import console, emit_json, handles_errors
from ffn_cli.cli.hardware_options import GPUOpt
from ffn_cli.cli.options import JsonOpt
from ffn_cli.hardware.cpu import MeasuredCPU
from ffn_cli.i18n import _
from ffn_cli.requests.gpu import resolve_gpu

MeasureCPUOpt = Annotated[
    bool,
    typer.Option("--measure-cpu", help="Also measure this CPU's GEMM rate and copy bandwidth (as ffn bench --calibrate; a few seconds)."),
]
CPUDTypeOpt = Annotated[str, typer.Option("--dtype", help="The dtype of the measured CPU GEMM: float32 or bfloat16.")]


@handles_errors
def hardware(gpu: GPUOpt = None, measure_cpu: MeasureCPUOpt = False, dtype: CPUDTypeOpt = "float32", json: JsonOpt = False) -> None:
    """The GPUs ffn knows: memory, bandwidth and DENSE peak per dtype, each from a datasheet (docs/hardware.md).

    --gpu NAME shows one; --measure-cpu adds this machine's CPU as measured.
    """
    from ffn_cli.errors import FFNError
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

    from ffn_cli.bench.calibrate import calibrate
    from ffn_cli.bench.config import BenchConfig
    from ffn_cli.device import resolve_device_dtype
    from ffn_cli.hardware.cpu import cpu_memory_bytes, cpu_name

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
