"""Weights per GPU when a whole model is split: routed experts divided over --ep ranks (over
--tp like any linear when --ep is 1), every other matrix (attention, dense and shared FFNs,
embeddings, LM head) divided over --tp, and what is left replicated on every GPU: biases,
norms, routers and a vision tower. The layout has max(tp, ep) GPUs. Weights only."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.spec import ModelSpec
from ffn_cli.models.weights import Checkpoint

__all__ = ["RankMemory", "rank_memory"]

_REPLICATED = ("vector", "router", "vision")


@dataclass(frozen=True)
class RankMemory:
    tp: int
    ep: int
    gpus: int
    expert_bytes: int  # on one GPU
    split_bytes: int  # the other matrices' share on one GPU
    replicated_bytes: int
    total_bytes: int  # the whole checkpoint

    @property
    def per_gpu_bytes(self) -> int:
        return self.expert_bytes + self.split_bytes + self.replicated_bytes


def rank_memory(stored: Checkpoint, spec: ModelSpec, *, tp: int, ep: int) -> RankMemory:
    for name, n in (("tp", tp), ("ep", ep)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise FFNError(name, n, _("must be a positive number of GPUs"))
    if max(tp, ep) % min(tp, ep):
        raise FFNError("ep", ep, _("and --tp {tp} must divide one another: the layout has max(tp, ep) GPUs").format(tp=tp))
    experts = spec.moe_ffn.experts if spec.moe_ffn is not None and spec.moe_layers else 0
    if ep > 1 and not experts:
        raise FFNError("ep", ep, _("{name} has no routed experts to divide: use --tp").format(name=spec.name))
    if ep > 1 and experts % ep:
        raise FFNError("ep", ep, _("must divide the {experts} experts").format(experts=experts))
    bits = {"experts": 0, "split": 0, "replicated": 0}
    for t in stored.tensors:
        key = "experts" if t.role == "experts" else "replicated" if t.role in _REPLICATED else "split"
        bits[key] += stored.bits_of(t)
    expert_share = ep if ep > 1 else tp
    return RankMemory(
        tp,
        ep,
        max(tp, ep),
        ceil(bits["experts"] / 8 / expert_share),
        ceil(bits["split"] / 8 / tp),
        ceil(bits["replicated"] / 8),
        stored.bytes_,
    )
