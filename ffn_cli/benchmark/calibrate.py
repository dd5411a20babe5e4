"""This device's own ceilings, measured in the same run: GEMM rate and copy bandwidth → Calibration.

A ceiling must be an upper bound worth the name: % of peak divides by it. So the GEMM rate is
the best single call over several shapes of the same FLOP count (a square one and the two
FFN-like ones, tokens × d × 4d and back), not one shape's median, and the copy bandwidth is the
best call too. A case that still beats it is reported as above the calibrated peak.
"""

from __future__ import annotations

import torch

from ffn_cli.accounting import DTYPE_BYTES
from ffn_cli.benchmark.config import BenchConfig
from ffn_cli.benchmark.result import Calibration
from ffn_cli.benchmark.timing import measure_calls
from ffn_cli.device import preflight
from ffn_cli.seeds import Stream, stream_seed

__all__ = ["calibrate", "calibration_shapes"]

OPERAND_SETS = 3  # operands rotated between calls, so no call finds the last one's in cache


def calibration_shapes(n: int) -> tuple[tuple[int, int, int], ...]:
    """(m, k, n) shapes of one FLOP count, 2·n³: square, then an up- and a down-projection's."""
    return ((n, n, n), (n, n // 2, 2 * n), (2 * n, 2 * n, n // 4))


def _gemm_best(device: torch.device, dtype: torch.dtype, shape: tuple[int, int, int], config: BenchConfig) -> tuple[float, int]:
    """(the best call's TFLOP/s, the calls timed) of an (m, k) @ (k, n) product."""
    m, k, n = shape
    draw = torch.Generator(device=device).manual_seed(stream_seed(config.seed, Stream.INPUT))
    pairs = [
        (torch.randn(m, k, generator=draw, device=device, dtype=dtype), torch.randn(k, n, generator=draw, device=device, dtype=dtype))
        for _ in range(OPERAND_SETS)
    ]

    def mm(i: int) -> None:
        a, w = pairs[i % OPERAND_SETS]
        torch.mm(a, w)

    stats = measure_calls(mm, lambda i: None, device, config)
    return 2 * m * k * n / (stats.min_ms * 1e-3) / 1e12, stats.n


def calibrate(device: torch.device, dtype: torch.dtype, dtype_name: str, config: BenchConfig) -> Calibration:
    """The best GEMM rate over calibration_shapes and the best device copy (read + write)."""
    cuda = device.type == "cuda"
    n = 8192 if cuda else 1024
    copy_elems = (256 << 20) if cuda else (16 << 20)  # float32: 1 GiB on GPUs, 64 MiB on CPUs
    shapes = calibration_shapes(n)
    b = DTYPE_BYTES[dtype_name]
    largest = max(OPERAND_SETS * (m * k + k * n) + m * n for m, k, n in shapes) * b
    preflight(max(largest, 2 * copy_elems * 4), device, f"--calibrate ({dtype_name})", meta_hint=False)
    with torch.inference_mode():
        rates = {shape: _gemm_best(device, dtype, shape, config) for shape in shapes}
        src = torch.randn(copy_elems, generator=torch.Generator(device=device).manual_seed(0), device=device, dtype=torch.float32)
        dst = torch.empty_like(src)

        def copy(i: int) -> None:
            dst.copy_(src)

        copy_stats = measure_calls(copy, lambda i: None, device, config)
    best = max(rates, key=lambda s: rates[s][0])
    return Calibration(
        dtype=dtype_name,
        gemm_shape=best,
        gemm_tflops=rates[best][0],
        gemm_samples=sum(calls for _, calls in rates.values()),
        gemm_shapes=len(shapes),
        copy_bytes=2 * copy_elems * 4,
        copy_gbps=2 * copy_elems * 4 / (copy_stats.min_ms * 1e-3) / 1e9,
    )
