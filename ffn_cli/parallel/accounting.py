"""Per-rank parameters, memory and communication of a sharded FFN, from the spec alone (no torch).

Tensor parallel (Megatron): gate and up are column-parallel (d_ff/tp rows of each weight per rank;
the fused gate_up weight keeps rank r's gate rows and up rows paired), down is row-parallel
(d_ff/tp columns per rank) and its bias is replicated and added once, after the all-reduce.
Expert parallel: rank r owns experts [r·E/ep, (r+1)·E/ep); the router, the shared experts and
their gate are replicated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ffn_cli.accounting import DTYPE_BYTES, ParamTensor, param_tensors
from ffn_cli.costs.parallel_layout import MAX_WORLD_SIZE
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.names import unknown_name
from ffn_cli.spec import FFNSpec, check_int
from ffn_cli.variants import SplitKind

if TYPE_CHECKING:
    pass

__all__ = [
    "COLUMN",
    "EXPERT",
    "MAX_WORLD_SIZE",
    "PAIRED",
    "REPLICATED",
    "ROW",
    "RankParams",
    "ShardTensor",
    "check_parallel",
    "ep_split",
    "owned_experts",
    "per_rank_params",
    "shard_layout",
    "token_chunks",
    "tp_allreduce_bytes",
    "tp_split",
]

# Ranks beyond this are a typo: the largest published TP/EP groups are a few hundred wide.

COLUMN, PAIRED, ROW = SplitKind.COLUMN, SplitKind.PAIRED, SplitKind.ROW
REPLICATED, EXPERT = SplitKind.REPLICATED, SplitKind.EXPERT


@dataclass(frozen=True)
class ShardTensor(ParamTensor):
    """One parameter tensor as rank r holds it (`shape`), beside its unsharded shape."""

    full_shape: tuple[int, ...] = ()
    split: SplitKind = REPLICATED


@dataclass(frozen=True)
class RankParams:
    """What one rank holds: its tensors, their parameter count and bytes in `dtype`."""

    rank: int
    tensors: tuple[ShardTensor, ...]
    dtype: str

    @property
    def params(self) -> int:
        return sum(t.count for t in self.tensors)

    @property
    def param_bytes(self) -> int:
        return self.params * DTYPE_BYTES[self.dtype]


def _divisors(n: int, limit: int = 64) -> str:
    """The world sizes up to `limit` that split n evenly, for the error message."""
    found = [str(k) for k in range(2, min(n, limit) + 1) if n % k == 0]
    return ", ".join(found) if found else "none above 1"


def check_parallel(spec: FFNSpec, *, tp: int = 1, ep: int = 1) -> None:
    """Refuse a split that cannot be made: one kind at a time, d_ff or experts divisible by N."""
    check_int("tp", tp, maximum=MAX_WORLD_SIZE)
    check_int("ep", ep, maximum=MAX_WORLD_SIZE)
    if tp > 1 and ep > 1:
        raise FFNError("ep", ep, _("use --tp {tp} or --ep {ep}, not both: one kind of parallelism at a time").format(tp=tp, ep=ep))
    if tp > 1:
        if not spec.info.tensor_parallel:
            raise FFNError(
                "tp",
                tp,
                _("tensor parallelism splits one FFN; for --variant {variant} split the experts with --ep").format(variant=spec.variant),
            )
        if spec.hidden % tp:
            allowed = _("must divide d_ff={hidden} (d_ff/tp hidden units per rank); it divides by {divisors}").format(
                hidden=spec.hidden, divisors=_divisors(spec.hidden)
            )
            raise FFNError("tp", tp, allowed)
        _check_per_unit_tensors_split(spec, tp)
    if ep > 1:
        if not spec.info.expert_parallel:
            raise FFNError("ep", ep, _("expert parallelism needs --variant moe (top-k routed experts)"))
        if spec.experts % ep:
            allowed = _("must divide experts={experts} (experts/ep per rank); it divides by {divisors}").format(
                experts=spec.experts, divisors=_divisors(spec.experts)
            )
            raise FFNError("ep", ep, allowed)


def _check_per_unit_tensors_split(spec: FFNSpec, tp: int) -> None:
    """A tensor with one entry per hidden unit must be cut with the units, never copied whole."""
    for t in spec.ffn_variant.layout(spec):
        if t.split == REPLICATED and any(dim in ("f", "2f") for dim in t.dims):
            raise FFNError(
                "tp",
                tp,
                _("--variant {variant} has {name}, one value per hidden unit, with no tensor-parallel split").format(
                    variant=spec.variant, name=t.name
                ),
            )


def tp_split(spec: FFNSpec, name: str) -> SplitKind:
    """How tensor parallelism splits the parameter (or buffer) `name`, as the variant declares it."""
    return spec.ffn_variant.tp_split(spec, name)


def owned_experts(rank: int, world_size: int, experts: int) -> range:
    """The contiguous block of experts rank `rank` owns."""
    per_rank = experts // world_size
    return range(rank * per_rank, (rank + 1) * per_rank)


def ep_split(spec: FFNSpec, name: str) -> tuple[SplitKind, int | None]:
    """(split, expert index) of the MoE parameter `name`: experts.{i}.… are owned, the rest replicated."""
    return spec.info.shard_split(spec, name)


def _tp_shape(shape: tuple[int, ...], split: SplitKind, tp: int) -> tuple[int, ...]:
    if split in (COLUMN, PAIRED):
        return (shape[0] // tp, *shape[1:])
    if split == ROW:
        return (shape[0], shape[1] // tp)
    return shape


def shard_layout(spec: FFNSpec, rank: int, *, tp: int = 1, ep: int = 1) -> list[ShardTensor]:
    """Every parameter tensor rank `rank` holds, named as in the unsharded module."""
    check_parallel(spec, tp=tp, ep=ep)
    mine = owned_experts(rank, ep, spec.experts)
    layout = []
    for t in param_tensors(spec):
        split, expert = spec.info.shard_split(spec, t.name)  # a mixture's tensors by expert, one FFN's by d_ff
        if expert is None or expert in mine:
            layout.append(ShardTensor(t.name, _tp_shape(t.shape, split, tp), t.shape, split))
    return layout


def per_rank_params(spec: FFNSpec, *, tp: int = 1, ep: int = 1, dtype: str = "float32") -> list[RankParams]:
    """Each rank's tensors, parameter count and bytes, for `ffn params --tp N` / `--ep N`."""
    if dtype not in DTYPE_BYTES:
        raise unknown_name("dtype", dtype, list(DTYPE_BYTES), what=N_("dtype"))
    world = max(tp, ep)
    return [RankParams(r, tuple(shard_layout(spec, r, tp=tp, ep=ep)), dtype) for r in range(world)]


def tp_allreduce_bytes(spec: FFNSpec, tokens: int, dtype: str = "float32") -> int:
    """Bytes each rank all-reduces per forward: the (tokens, d_model) partial sums of down_proj.

    A ring all-reduce moves 2·(tp-1)/tp times this over each rank's links.
    """
    return tokens * spec.d_model * DTYPE_BYTES[dtype]


def token_chunks(tokens: int, world_size: int) -> list[int]:
    """Tokens each rank holds under expert parallelism: contiguous, as torch.tensor_split cuts them."""
    base, extra = divmod(tokens, world_size)
    return [base + (1 if r < extra else 0) for r in range(world_size)]
