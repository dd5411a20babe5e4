"""How long a sweep will take, said before it starts: each case's matmul FLOPs at a rate this
device reaches (--calibrate's, `ffn hardware --measure`'s, else one small GEMM timed here, a few
milliseconds), through the same warm-up and repeat rules the timer follows. An estimate for the
reader waiting, never a number in the report."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from ffn_cli.accounting import matmul_flops_per_token
from ffn_cli.benchmark.case import Case
from ffn_cli.benchmark.config import MAX_REPEATS, BenchConfig
from ffn_cli.benchmark.timing import MIN_AUTO_REPEATS
from ffn_cli.device import resolve_device_dtype

__all__ = ["SHOWN_FROM_S", "SweepEstimate", "case_seconds", "estimate_sweep", "gemm_tflops"]

SHOWN_FROM_S = 5.0  # a shorter sweep starts without a word
_GEMM_SIDE = {"cuda": 4096, "cpu": 512}  # timed in microseconds on a GPU, a few milliseconds on a CPU


@dataclass(frozen=True)
class SweepEstimate:
    seconds: float
    cases: int
    flops: int  # the matmul FLOPs of one call of every case, summed
    tflops: dict[str, float]  # the rate assumed per dtype
    measured: bool  # True: one GEMM timed here; False: --calibrate's or the saved profile's rate


def call_flops(case: Case, config: BenchConfig) -> int:
    """Matmul FLOPs of one timed call: ×3 with the backward (dX and dW), and at most one forward
    more when checkpointing recomputes it (docs/benchmarks.md: 3.5 to 3.67 forwards in fact)."""
    passes = (4 if case.checkpoint else 3) if config.backward else 1
    return matmul_flops_per_token(case.spec) * case.tokens * passes


def case_seconds(per_call_s: float, config: BenchConfig) -> float:
    """The first call, the warm-up (by time, at least one call) and the timed calls (--repeats,
    or enough to fill --min-time, at least MIN_AUTO_REPEATS, at most MAX_REPEATS)."""
    warm_up = max(config.warmup_ms / 1e3, per_call_s)
    if config.repeats is not None:
        timed = config.repeats * per_call_s
    else:
        timed = min(MAX_REPEATS * per_call_s, max(MIN_AUTO_REPEATS * per_call_s, config.min_time_ms / 1e3))
    return per_call_s + warm_up + timed


def gemm_tflops(device: torch.device, dtype: str) -> float:
    """The best of three square GEMMs, after one untimed, in TFLOP/s: a rate this device reaches now."""
    n = _GEMM_SIDE["cuda" if device.type == "cuda" else "cpu"]
    _device, torch_dtype = resolve_device_dtype(str(device), dtype)
    a = torch.ones(n, n, device=device, dtype=torch_dtype)
    best = float("inf")
    with torch.inference_mode():
        for i in range(4):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            start = time.perf_counter()
            torch.mm(a, a)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if i:
                best = min(best, time.perf_counter() - start)
    return 2 * n**3 / max(best, 1e-9) / 1e12


def estimate_sweep(
    cases: Iterable[Case], config: BenchConfig, known_tflops: Callable[[str], float | None], device: torch.device
) -> SweepEstimate:
    """Every case's seconds, summed; a dtype with no known rate is priced by gemm_tflops."""
    rates: dict[str, float] = {}
    measured = False
    seconds, flops, count = 0.0, 0, 0
    for case in cases:
        if case.dtype not in rates:
            known = known_tflops(case.dtype)
            measured = measured or known is None
            rates[case.dtype] = known if known is not None else gemm_tflops(device, case.dtype)
        per_call = call_flops(case, config)
        seconds += case_seconds(per_call / (rates[case.dtype] * 1e12), config)
        flops += per_call
        count += 1
    return SweepEstimate(seconds, count, flops, rates, measured)
