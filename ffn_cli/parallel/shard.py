"""Pure functions: the unsharded module's state_dict → the tensors rank r holds.

Names stay those of the unsharded module (`up_proj.weight`, `experts.5.down_proj.weight`), so a
shard reads like the checkpoint it was cut from. Every returned tensor is a fresh copy: the full
weights can be freed once the shard is taken.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.parallel.accounting import COLUMN, PAIRED, ROW, check_parallel, ep_split, owned_experts, tp_split
from ffn_cli.spec import FFNSpec

__all__ = ["shard_expert_parallel", "shard_tensor_parallel"]


def _check_rank(rank: int, world_size: int) -> None:
    if not 0 <= rank < world_size:
        raise FFNError("rank", rank, _("must be in [0, {last}]").format(last=world_size - 1))


def _rows(t: Tensor, rank: int, world_size: int) -> Tensor:
    per = t.shape[0] // world_size
    return t[rank * per : (rank + 1) * per]


def _tp_slice(spec: FFNSpec, name: str, t: Tensor, rank: int, world_size: int) -> Tensor:
    split = tp_split(spec, name)
    if split == COLUMN:
        return _rows(t, rank, world_size)  # (d_ff/tp, d) or (d_ff/tp,)
    if split == PAIRED:
        gate, up = t.chunk(2, dim=0)  # gate rows come first in the fused weight
        return torch.cat((_rows(gate, rank, world_size), _rows(up, rank, world_size)))  # (2·d_ff/tp, d)
    if split == ROW:
        per = t.shape[1] // world_size
        return t[:, rank * per : (rank + 1) * per]  # (d, d_ff/tp)
    return t  # replicated: down_proj.bias (added once after the all-reduce), scalars every rank uses


def shard_tensor_parallel(state_dict: Mapping[str, Tensor], spec: FFNSpec, rank: int, world_size: int) -> dict[str, Tensor]:
    """Megatron-style: gate/up column-parallel, down row-parallel, down's bias replicated.

    The `hidden_mask` buffer of the sparse variant is cut with the hidden units it masks.
    """
    check_parallel(spec, tp=world_size)
    _check_rank(rank, world_size)
    return {name: _tp_slice(spec, name, t, rank, world_size).clone() for name, t in state_dict.items()}


def shard_expert_parallel(state_dict: Mapping[str, Tensor], spec: FFNSpec, rank: int, world_size: int) -> dict[str, Tensor]:
    """Rank r's block of experts, whole, plus the replicated router and shared experts."""
    check_parallel(spec, ep=world_size)
    _check_rank(rank, world_size)
    mine = owned_experts(rank, world_size, spec.experts)
    shard = {}
    for name, t in state_dict.items():
        _split, expert = ep_split(spec, name)
        if expert is None or expert in mine:
            shard[name] = t.clone()
    return shard
