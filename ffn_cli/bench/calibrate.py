"""This device's own ceilings, measured in the same run: GEMM rate and copy bandwidth → Calibration."""

from __future__ import annotations

import torch

from ffn_cli.accounting import DTYPE_BYTES
from ffn_cli.bench.config import BenchConfig
from ffn_cli.bench.result import Calibration
from ffn_cli.bench.timing import measure_calls
from ffn_cli.device import preflight

__all__ = ["calibrate"]


def calibrate(device: torch.device, dtype: torch.dtype, dtype_name: str, config: BenchConfig) -> Calibration:
    """GEMM rate (n³, three operand pairs rotated) and device copy bandwidth (read + write)."""
    cuda = device.type == "cuda"
    n = 8192 if cuda else 1024
    copy_elems = (256 << 20) if cuda else (16 << 20)  # float32: 1 GiB on GPUs, 64 MiB on CPUs
    b = DTYPE_BYTES[dtype_name]
    preflight(6 * n * n * b + n * n * b + 2 * copy_elems * 4, device, f"--calibrate ({dtype_name})", meta_hint=False)
    torch.manual_seed(config.seed)
    pairs = [(torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)) for _ in range(3)]
    with torch.inference_mode():

        def mm(i: int) -> None:
            a, w = pairs[i % 3]
            torch.mm(a, w)

        gemm = measure_calls(mm, lambda i: None, device, config)
        pairs.clear()  # free them before the copy buffers
        src = torch.randn(copy_elems, device=device, dtype=torch.float32)
        dst = torch.empty_like(src)

        def copy(i: int) -> None:
            dst.copy_(src)

        copy_stats = measure_calls(copy, lambda i: None, device, config)
    return Calibration(
        dtype=dtype_name,
        gemm_n=n,
        gemm_tflops=2 * n**3 / (gemm.median_ms * 1e-3) / 1e12,
        gemm_samples=gemm.n,
        copy_bytes=2 * copy_elems * 4,
        copy_gbps=2 * copy_elems * 4 / (copy_stats.median_ms * 1e-3) / 1e9,
    )
