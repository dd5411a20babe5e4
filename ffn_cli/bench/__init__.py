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
`case` (one case → BenchResult), `run` (the sweep → BenchReport), `result` (the dataclasses).
"""

from __future__ import annotations

from ffn_cli.bench.config import CACHE_MODES, BenchConfig
from ffn_cli.bench.implementations import COMPILE_MODES, IMPLS, Impl, impl_for, parse_impls
from ffn_cli.bench.memory import estimate_memory_bytes, min_traffic_bytes
from ffn_cli.bench.result import BenchEnv, BenchReport, BenchResult, Calibration, CheckpointDelta
from ffn_cli.bench.run import ProgressFn, run_bench
from ffn_cli.bench.stats import NOISY_REL_IQR, TimingStats, summarize
from ffn_cli.bench.timing import COLD_INPUT_BUFFERS, CUDA_MIN_FLUSH_BYTES, MIN_AUTO_REPEATS

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
    "Impl",
    "ProgressFn",
    "TimingStats",
    "estimate_memory_bytes",
    "impl_for",
    "min_traffic_bytes",
    "parse_impls",
    "run_bench",
    "summarize",
]
