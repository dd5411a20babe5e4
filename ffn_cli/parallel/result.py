"""What a sharded run reports, as plain data (no torch): the renderers read these fields only."""

from __future__ import annotations

from dataclasses import dataclass, field

from ffn_cli.parallel.accounting import ShardTensor
from ffn_cli.spec import FFNSpec

__all__ = ["CommRecord", "ParallelResult", "ParallelTiming", "RankResult", "RankTiming", "StepShape", "tolerance_for"]

Shape = tuple[int, ...]

# Largest |sharded − unsharded| accepted, relative to max(1, max |unsharded|): the sums only
# change order, so a few ulps of the dtype times the reduction length is already generous.
_RELATIVE_TOLERANCE = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2, "bfloat16": 5e-2}


def tolerance_for(dtype: str, scale: float) -> float:
    return _RELATIVE_TOLERANCE[dtype] * max(1.0, scale)


@dataclass(frozen=True)
class StepShape:
    """One step of one rank's forward: what went in and what came out."""

    name: str
    formula: str
    input_shapes: tuple[Shape, ...]
    output_shape: Shape


@dataclass(frozen=True)
class CommRecord:
    """One collective call as one rank saw it.

    all_reduce: sent and received are the bytes summed (the payload; a ring moves 2·(N-1)/N of
    it per link). all_to_all: bytes to and from the other ranks; the rows a rank keeps are not counted.
    """

    op: str
    name: str
    input_shape: Shape
    output_shape: Shape
    sent_bytes: int
    received_bytes: int


@dataclass(frozen=True)
class RankResult:
    """Everything one rank held, computed and moved."""

    rank: int
    device: str
    input_shape: Shape
    output_shape: Shape
    shards: tuple[ShardTensor, ...]
    steps: tuple[StepShape, ...]
    comm: tuple[CommRecord, ...]
    param_bytes: int
    max_abs_diff: float
    peak_memory_bytes: int | None = None  # CUDA only: the peak of the sharded forward
    tokens: int = 0
    experts: tuple[int, ...] = ()  # EP: the experts this rank owns
    tokens_per_expert: tuple[int, ...] = ()  # EP: rows each owned expert computed (after capacity)
    tokens_sent: tuple[int, ...] = ()  # EP: (token, expert) rows dispatched to each rank
    tokens_received: tuple[int, ...] = ()  # EP: rows received from each rank
    dropped: int = 0

    @property
    def params(self) -> int:
        return sum(t.count for t in self.shards)

    def _bytes(self, op: str, sent: bool) -> int:
        return sum(c.sent_bytes if sent else c.received_bytes for c in self.comm if c.op == op)

    @property
    def allreduce_bytes(self) -> int:
        return self._bytes("all_reduce", sent=True)

    @property
    def alltoall_sent_bytes(self) -> int:
        return self._bytes("all_to_all", sent=True)

    @property
    def alltoall_received_bytes(self) -> int:
        return self._bytes("all_to_all", sent=False)


@dataclass(frozen=True)
class ParallelResult:
    """A tensor- (`mode` "tp") or expert-parallel ("ep") forward over `world_size` ranks,
    checked against the unsharded module built from the same seed on the same input."""

    mode: str
    spec: FFNSpec
    world_size: int
    backend: str
    device: str
    dtype: str
    batch: int
    seq_len: int
    seed: int
    input_shape: Shape
    output_shape: Shape
    unsharded_params: int
    ranks: tuple[RankResult, ...]
    max_abs_diff_vs_unsharded: float
    tolerance: float
    launcher: str  # "spawn" or "torchrun"
    unsharded_tokens_per_expert: tuple[int, ...] = field(default=())  # EP: the one-device routing

    @property
    def passed(self) -> bool:
        return self.max_abs_diff_vs_unsharded <= self.tolerance

    @property
    def tokens_per_expert(self) -> tuple[int, ...]:
        """EP: rows each expert computed, gathered from the ranks that own them, in expert order."""
        pairs = sorted((e, n) for r in self.ranks for e, n in zip(r.experts, r.tokens_per_expert, strict=True))
        return tuple(n for _, n in pairs)


@dataclass(frozen=True)
class RankTiming:
    rank: int
    device: str
    median_ms: float
    min_ms: float
    repeats: int


@dataclass(frozen=True)
class ParallelTiming:
    """Median forward time of each rank, collectives included; the step takes the slowest rank's."""

    mode: str
    spec: FFNSpec
    world_size: int
    backend: str
    device: str
    dtype: str
    batch: int
    seq_len: int
    ranks: tuple[RankTiming, ...]
    timer: str  # "cuda events" or "perf_counter"

    @property
    def median_ms(self) -> float:
        return max(r.median_ms for r in self.ranks)
