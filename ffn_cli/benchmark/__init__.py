"""Time an FFN on CPU or CUDA, honestly, and say how it was measured → BenchReport.

Method: the first call (compilation, cuBLAS heuristics) and a warm-up by time stay out of the
numbers; each timed call is bracketed by CUDA events (on CPU, by the host clock, as CPU ops
are synchronous); the Python garbage collector is off while timing; in `cold` cache mode
inputs rotate among several buffers and a buffer twice the last-level cache is written
between calls. The median and IQR of the samples are reported, never the mean. Achieved
TFLOP/s come from the analytic matmul FLOPs (×3 with backward: dX and dW each cost one forward).

The modules: `config` (BenchConfig), `implementations` (eager / fused / compiled), `timing`
(the timer and cache flushing), `stats` (samples → TimingStats), `memory` (estimates and
measured peaks), `environment` (BenchEnv, threads), `calibrate` (this device's ceilings),
`case` (one case → BenchResult), `run` (the sweep → BenchReport), `result` (the dataclasses),
`estimate` (how long a sweep will take, said before it starts).
"""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use: the result dataclasses stay importable without torch.
_HOME = {
    "BenchConfig": "config",
    "BenchEnv": "result",
    "BenchReport": "result",
    "BenchResult": "result",
    "CACHE_MODES": "config",
    "COLD_INPUT_BUFFERS": "timing",
    "COMPILE_MODES": "implementations",
    "CUDA_MIN_FLUSH_BYTES": "timing",
    "Calibration": "result",
    "CheckpointDelta": "result",
    "IMPLS": "implementations",
    "Impl": "implementations",
    "MIN_AUTO_REPEATS": "timing",
    "NOISY_REL_IQR": "stats",
    "ProgressFn": "run",
    "EstimateFn": "run",
    "SweepEstimate": "estimate",
    "TimingStats": "stats",
    "estimate_memory_bytes": "memory",
    "impl_for": "implementations",
    "min_traffic_bytes": "memory",
    "parse_impls": "implementations",
    "run_bench": "run",
    "summarize": "stats",
}


__all__ = [
    "CACHE_MODES",
    "COLD_INPUT_BUFFERS",
    "COMPILE_MODES",
    "CUDA_MIN_FLUSH_BYTES",
    "IMPLS",
    "MIN_AUTO_REPEATS",
    "NOISY_REL_IQR",
    "BenchConfig",
    "BenchEnv",
    "BenchReport",
    "BenchResult",
    "Calibration",
    "CheckpointDelta",
    "EstimateFn",
    "Impl",
    "ProgressFn",
    "SweepEstimate",
    "TimingStats",
    "estimate_memory_bytes",
    "impl_for",
    "min_traffic_bytes",
    "parse_impls",
    "run_bench",
    "summarize",
]


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
