"""What `ffn hardware` measures with torch: this CPU as a row of the table (--measure-cpu), or
this device's profile, measured and saved (--measure)."""

from __future__ import annotations

import math

import torch

from ffn_cli.benchmark.calibrate import calibrate
from ffn_cli.benchmark.config import BenchConfig
from ffn_cli.benchmark.measure import ProgressFn, measure_device
from ffn_cli.device import resolve_device_dtype
from ffn_cli.hardware.cpu import MeasuredCPU, cpu_memory_bytes, cpu_name
from ffn_cli.hardware.profile import save_profile
from ffn_cli.services.results import DeviceProfiled

__all__ = ["measure_cpu", "profile_device"]


def measure_cpu(dtype: str) -> MeasuredCPU:
    """The calibration `ffn bench --calibrate` runs, on the CPU, as a row of the table."""
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


def profile_device(threads: int | None, *, quick: bool, on_progress: ProgressFn | None) -> DeviceProfiled:
    """This device (CUDA when present, else the CPU) measured and saved as the profile `this`."""
    if threads is not None:
        torch.set_num_threads(threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    profile = measure_device(device, quick=quick, on_progress=on_progress)
    return DeviceProfiled(profile, save_profile(profile))
