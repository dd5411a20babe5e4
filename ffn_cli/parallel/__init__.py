"""Tensor and expert parallelism of the FFN on torch.distributed.

`ffn_cli.parallel.accounting` and `.result` never import torch (for `ffn params --tp N`); the
runners (`run_parallel`, …) and shard functions load torch on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.parallel.accounting import RankParams, ShardTensor, check_parallel, per_rank_params, shard_layout, tp_allreduce_bytes
from ffn_cli.parallel.result import CommRecord, ParallelResult, ParallelTiming, RankResult, RankTiming, StepShape

if TYPE_CHECKING:
    from ffn_cli.parallel.run import is_primary_process, run_parallel, time_parallel_forward, under_torchrun
    from ffn_cli.parallel.shard import shard_expert_parallel, shard_tensor_parallel

__all__ = [
    "CommRecord",
    "ParallelResult",
    "ParallelTiming",
    "RankParams",
    "RankResult",
    "RankTiming",
    "ShardTensor",
    "StepShape",
    "check_parallel",
    "is_primary_process",
    "per_rank_params",
    "run_parallel",
    "shard_expert_parallel",
    "shard_layout",
    "shard_tensor_parallel",
    "time_parallel_forward",
    "tp_allreduce_bytes",
    "under_torchrun",
]

_LAZY = {
    "is_primary_process": "ffn_cli.parallel.run",
    "run_parallel": "ffn_cli.parallel.run",
    "time_parallel_forward": "ffn_cli.parallel.run",
    "under_torchrun": "ffn_cli.parallel.run",
    "shard_expert_parallel": "ffn_cli.parallel.shard",
    "shard_tensor_parallel": "ffn_cli.parallel.shard",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ffn_cli.parallel' has no attribute {name!r}")
