"""The timer: the first call and a warm-up by time kept out of the numbers, then n timed calls.

Each timed call is bracketed by CUDA events (on CPU, by the host clock, as CPU ops are
synchronous), with an untimed prepare step (grad reset, cache flush) before it; the Python
garbage collector is off while timing. In `cold` cache mode inputs rotate among several buffers
and a buffer twice the last-level cache is written between calls.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from ffn_cli.benchmark.config import MAX_REPEATS, BenchConfig
from ffn_cli.benchmark.stats import TimingStats, summarize

__all__ = [
    "COLD_INPUT_BUFFERS",
    "CUDA_MIN_FLUSH_BYTES",
    "MIN_AUTO_REPEATS",
    "WarmUp",
    "cache_flush_bytes",
    "collector_paused",
    "first_call_s",
    "input_buffers",
    "measure_calls",
    "repeats_for",
    "time_calls",
    "warm_up",
]

COLD_INPUT_BUFFERS = 3
MIN_AUTO_REPEATS = 10
CPU_LLC_FALLBACK_BYTES = 32 << 20
CUDA_MIN_FLUSH_BYTES = 256 << 20  # as triton.testing.do_bench

CallFn = Callable[[int], object]  # call i: run(i) is timed, prepare(i) runs before it untimed; what they return is dropped


# --- the cache ------------------------------------------------------------------------------------


def input_buffers(cache: str) -> int:
    """Inputs the timed calls rotate among: several when cold, so none is still in cache."""
    return COLD_INPUT_BUFFERS if cache == "cold" else 1


def cache_flush_bytes(device: torch.device, cache: str) -> int:
    """Bytes written between calls to evict the last-level cache (0 when hot)."""
    if cache == "hot":
        return 0
    if device.type == "cuda":
        return max(2 * torch.cuda.get_device_properties(device).L2_cache_size, CUDA_MIN_FLUSH_BYTES)
    return 2 * _cpu_llc_bytes()


def _cpu_llc_bytes() -> int:
    """Size of the largest CPU cache level, from sysfs (Linux); a fallback elsewhere."""
    best = 0
    for index in range(8):
        try:
            with open(f"/sys/devices/system/cpu/cpu0/cache/index{index}/size") as f:
                text = f.read().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or CPU_LLC_FALLBACK_BYTES


# --- the clock ------------------------------------------------------------------------------------


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def first_call_s(run: CallFn, prepare: CallFn, device: torch.device) -> float:
    """Seconds of the first call alone (it compiles, or sizes the calls after it), synchronised."""
    prepare(0)
    _sync(device)
    t0 = time.perf_counter()
    run(0)
    _sync(device)
    return time.perf_counter() - t0


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside: one full collection first (tens of ms with torch loaded),
    unless a caller has paused the collector already, having collected once for all its calls."""
    if not gc.isenabled():
        yield
        return
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def time_calls(run: CallFn, prepare: CallFn, n: int, device: torch.device) -> list[float]:
    """n samples in ms. prepare(i) (grad reset, cache flush) runs before each call, untimed."""
    with collector_paused():
        if device.type == "cuda":
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            torch.cuda.synchronize(device)
            for i in range(n):
                prepare(i)
                starts[i].record()
                run(i)
                ends[i].record()
            torch.cuda.synchronize(device)
            return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
        samples = []
        for i in range(n):
            prepare(i)
            t0 = time.perf_counter_ns()
            run(i)
            samples.append((time.perf_counter_ns() - t0) / 1e6)
        return samples


@dataclass(frozen=True)
class WarmUp:
    first_call_s: float
    calls: int  # the first call included
    per_call_ms: float


def warm_up(run: CallFn, prepare: CallFn, device: torch.device, warmup_ms: float) -> WarmUp:
    """The first call alone (it compiles), then calls until warmup_ms have passed (at least one).
    Synchronised after each call, so the host clock is right; nothing here is reported as a time."""
    first_s = first_call_s(run, prepare, device)
    calls, start = 0, time.perf_counter()
    while calls == 0 or (time.perf_counter() - start) * 1e3 < warmup_ms:
        prepare(calls + 1)
        run(calls + 1)
        _sync(device)
        calls += 1
    return WarmUp(first_s, calls + 1, (time.perf_counter() - start) * 1e3 / calls)


def repeats_for(config: BenchConfig, per_call_ms: float) -> int:
    """--repeats when given; otherwise enough calls to fill min_time_ms, within bounds."""
    if config.repeats is not None:
        return config.repeats
    return max(MIN_AUTO_REPEATS, min(MAX_REPEATS, math.ceil(config.min_time_ms / max(per_call_ms, 1e-6))))


def measure_calls(run: CallFn, prepare: CallFn, device: torch.device, config: BenchConfig) -> TimingStats:
    """Warm up, then time and summarize: the whole timer for a call that needs nothing in between."""
    warm = warm_up(run, prepare, device, config.warmup_ms)
    return summarize(time_calls(run, prepare, repeats_for(config, warm.per_call_ms), device))
