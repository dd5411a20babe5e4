"""`ffn trace` and `ffn_cli.trace(...)`: a checked TraceRequest traced, through the one
pipeline (`tracing/pipeline.py`) for every target, or as one sharded forward under --tp / --ep.
Returns services/results.py's TraceAnswer or ShardedTrace.

This module is torch's boundary: it checks the temporary folder and reads the model named
(services/model_layer.py, torch-free), and only then loads services/trace_run.py, which runs
torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.services.environment import require_temp_dir
from ffn_cli.services.results import ShardedTrace, TraceAnswer

if TYPE_CHECKING:
    from ffn_cli.configs.layer_select import LayerChoice
    from ffn_cli.configs.unknown import UnknownModelType
    from ffn_cli.requests.trace import TraceRequest

__all__ = ["trace"]


def trace(request: TraceRequest) -> TraceAnswer | ShardedTrace:
    """What `ffn trace` answers for `request`; a failed --check is the result's `failure`,
    raised once the result is shown."""
    require_temp_dir()  # before torch is imported; the request was checked whole as it was made
    choice: LayerChoice | None = None
    unknown: UnknownModelType | None = None
    if request.kind != "module" and request.names_model:
        from ffn_cli.services.model_layer import trace_layer  # the model readers load with a model

        request, choice, unknown = trace_layer(request)
    from ffn_cli.services.trace_run import run_trace  # torch, once the options and the model are read

    return run_trace(request, choice, unknown)
