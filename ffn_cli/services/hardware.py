"""`ffn hardware`: a checked HardwareRequest answered as the GPU table (every row, or the one
--gpu names, with this CPU as measured under --measure-cpu) or as a profile of this device,
measured and saved (--measure). Torch is imported only inside the functions that measure, so
the table alone never loads it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.services.environment import require_temp_dir
from ffn_cli.services.results import DeviceProfiled, GPUTable

if TYPE_CHECKING:
    from ffn_cli.benchmark.measure import ProgressFn
    from ffn_cli.hardware.cpu import MeasuredCPU
    from ffn_cli.requests.hardware import HardwareRequest

__all__ = ["hardware"]


def hardware(request: HardwareRequest, on_progress: ProgressFn | None = None) -> GPUTable | DeviceProfiled:
    """What `ffn hardware` answers for `request`; `on_progress` hears of each measurement of a
    profile (never while one runs)."""
    if request.measure:
        return _profile(request, on_progress)
    from ffn_cli.hardware import GPUS  # the GPU table loads when asked, not with the command list

    gpus = (resolve_gpu(request.gpu),) if request.gpu is not None else tuple(GPUS)
    return GPUTable(gpus, _measure_cpu(request.dtype) if request.measure_cpu else None)


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


def _profile(request: HardwareRequest, on_progress: ProgressFn | None) -> DeviceProfiled:
    """This device (CUDA when present, else the CPU) measured and saved as the profile `this`."""
    require_temp_dir()  # before torch is imported
    import torch

    from ffn_cli.benchmark.measure import measure_device
    from ffn_cli.hardware.profile import save_profile

    if request.threads is not None:
        torch.set_num_threads(request.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    profile = measure_device(device, quick=request.quick, on_progress=on_progress)
    return DeviceProfiled(profile, save_profile(profile))
