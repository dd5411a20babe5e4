"""Tensor and expert parallelism of the FFN on torch.distributed.

The package's surface is what needs no torch (`ffn params --tp N` counts with it): the
accounting and the result dataclasses. The runners (`ffn_cli.parallel.run`: `run_parallel`,
`time_parallel_forward`, …) and the shard functions (`ffn_cli.parallel.shard`) import torch,
and are imported from their modules by the services that run them.
"""

from __future__ import annotations

from ffn_cli.parallel.accounting import RankParams, ShardTensor, check_parallel, per_rank_params, shard_layout, tp_allreduce_bytes
from ffn_cli.parallel.result import CommRecord, ParallelResult, ParallelTiming, RankResult, RankTiming, StepShape

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
    "per_rank_params",
    "shard_layout",
    "tp_allreduce_bytes",
]
