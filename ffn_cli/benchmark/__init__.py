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
The package's surface is what needs no torch (the renderers read it): the configuration, the
results and their statistics; what times a module is imported from its module.
"""

from __future__ import annotations

from ffn_cli.benchmark.config import CACHE_MODES, BenchConfig
from ffn_cli.benchmark.result import BenchEnv, BenchReport, BenchResult, Calibration, CheckpointDelta
from ffn_cli.benchmark.stats import NOISY_REL_IQR, TimingStats, summarize

__all__ = [
    "CACHE_MODES",
    "NOISY_REL_IQR",
    "BenchConfig",
    "BenchEnv",
    "BenchReport",
    "BenchResult",
    "Calibration",
    "CheckpointDelta",
    "TimingStats",
    "summarize",
]
