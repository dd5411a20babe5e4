"""`ffn bench` and `ffn_cli.bench(...)`: a checked BenchRequest timed, a sweep of cases or one
sharded forward under --tp / --ep, returned as services/results.py's BenchSweep or ShardedTiming.

This module is torch's boundary: it checks the temporary folder and reads the model named
(services/model_layer.py, torch-free), and only then loads services/bench_run.py, which times
with torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.services.environment import require_temp_dir
from ffn_cli.services.results import BenchSweep, ShardedTiming

if TYPE_CHECKING:
    from ffn_cli.benchmark.run import EstimateFn, ProgressFn
    from ffn_cli.configs.layer_select import LayerChoice
    from ffn_cli.requests.bench import BenchRequest

__all__ = ["bench"]


def bench(
    request: BenchRequest, on_progress: ProgressFn | None = None, on_estimate: EstimateFn | None = None
) -> BenchSweep | ShardedTiming:
    """The timings `ffn bench` answers for `request`; `on_progress` hears of each step of a sweep
    (never while timing), `on_estimate` how long a long sweep will take."""
    require_temp_dir()  # before torch is imported
    choice: LayerChoice | None = None
    if request.names_model:
        from ffn_cli.services.model_layer import bench_layer  # the model readers load with a model

        choice = bench_layer(request)
    from ffn_cli.services.bench_run import run_bench_request  # torch, once the model is read

    return run_bench_request(request, choice, on_progress, on_estimate)
