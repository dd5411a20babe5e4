"""The torch modules of the mixtures: `moe` (top-k routing, capacity, shared experts) and
`soft_moe` (every expert on every token). Each step runs in a named region, so the trace
labels it by where it ran, whichever order the dispatch takes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor, nn

from ffn_cli.modules.ffn import FFN, FFNModule, ModuleWeights, make_linear
from ffn_cli.modules.routing import capacity, route, router_probs, sort_by_expert
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import MixtureVariant

__all__ = ["DispatchOrder", "DispatchStats", "MoEFFN", "SoftMoEFFN"]

DispatchOrder = Literal["by_expert", "sorted"]


@dataclass
class DispatchStats:
    """What the last MoE forward routed: tokens per expert, after capacity, and drops."""

    tokens: int
    tokens_per_expert: list[int] = field(default_factory=list)
    dropped: int = 0
    capacity: int | None = None
    assumed_balanced: bool = False  # meta tensors have no values to route by


def _flatten(x: Tensor) -> Tensor:
    return x.reshape(-1, x.shape[-1])  # (B, T, d) → (N, d)


def _unflatten(out: Tensor, shape: torch.Size) -> Tensor:
    return out.reshape(shape)


def balanced_share(pairs: int, experts: int, expert: int) -> int:
    """Meta tensors have no values to route by: the N·k (token, expert) pairs are spread as
    evenly as they go, the first pairs mod E experts taking one more, so the shares sum to N·k."""
    share, extra = divmod(pairs, experts)
    return share + (1 if expert < extra else 0)


def _balanced(chosen: Tensor, experts: int, expert: int) -> tuple[Tensor, Tensor]:
    n = balanced_share(chosen.numel(), experts, expert)
    return torch.arange(n, device=chosen.device), torch.zeros(n, dtype=torch.long, device=chosen.device)


def _rows_of(chosen: Tensor, expert: int) -> tuple[Tensor, Tensor]:
    rows, slot = torch.where(chosen == expert)  # row-major: token order
    return rows, slot


def _counts(chosen: Tensor, experts: int) -> Tensor:
    return torch.bincount(chosen.flatten(), minlength=experts)  # (E,): pairs per expert


def _gather(tokens: Tensor, rows: Tensor) -> Tensor:
    return tokens[rows]  # (n_e, d)


def _weighted_add(out: Tensor, rows: Tensor, expert_out: Tensor, weights: Tensor, slot: Tensor) -> Tensor:
    return out.index_add(0, rows, expert_out * weights[rows, slot].unsqueeze(-1))


class _Mixture(FFNModule):
    """The router and E experts of the spec's expert variant."""

    def __init__(self, spec: FFNSpec, variant: MixtureVariant) -> None:
        super().__init__(spec, variant)
        self.mixture = variant
        expert = variant.expert(spec)
        self.router = make_linear(spec.d_model, spec.experts, False)
        self.experts = nn.ModuleList(FFN(spec, expert, spec.hidden) for _ in range(spec.experts))


class MoEFFN(_Mixture):
    """Top-k routing: float32 softmax over all experts, top-k, optional renormalisation
    (Mixtral), optional capacity with dropped tokens (Switch), shared experts (DeepSeek-MoE)."""

    def __init__(self, spec: FFNSpec, variant: MixtureVariant, dispatch: DispatchOrder = "by_expert") -> None:
        super().__init__(spec, variant)
        shared = variant.shared_hidden(spec)
        expert = variant.expert(spec)
        self.shared_experts = FFN(spec, expert, shared) if shared else None
        self.shared_expert_gate = make_linear(spec.d_model, 1, False) if shared and spec.shared_expert_gate else None
        self.dispatch = dispatch
        self.last_dispatch: DispatchStats | None = None

    def _forward(self, x: Tensor) -> Tensor:
        w = ModuleWeights(self)
        tokens = w.step("flatten", _flatten, x)  # (N, d)
        probs = w.step("softmax", router_probs, w.linear("router", tokens))  # (N, E)
        weights, chosen = route(self.spec, probs, tokens.dtype, w.step)  # (N, k) each
        stats = DispatchStats(tokens=tokens.shape[0], capacity=capacity(self.spec, tokens.shape[0]), assumed_balanced=x.is_meta)
        out = w.step("combine", torch.zeros_like, tokens)
        for e, (rows, slot) in self._assignments(w, chosen, stats).items():
            expert_out = w.call(f"experts.{e}", w.step("dispatch", _gather, tokens, rows))  # (n_e, d)
            out = w.step("combine", _weighted_add, out, rows, expert_out, weights, slot)
        self.last_dispatch = stats
        return w.step("unflatten", _unflatten, self._add_shared(w, tokens, out), x.shape)

    def _assignments(self, w: ModuleWeights, chosen: Tensor, stats: DispatchStats) -> dict[int, tuple[Tensor, Tensor]]:
        """The (token rows, slot) of each expert that has tokens after capacity, in token order.
        The counts come first, in one step: as in transformers' MoE blocks, an expert no token
        chose is not looked up and does not run. `stats` keeps every expert's count, zeros too."""
        experts = self.spec.experts
        if chosen.is_meta:
            counts = [balanced_share(chosen.numel(), experts, e) for e in range(experts)]
        elif self.dispatch == "sorted":
            token_idx, slot, counted = w.step("dispatch", sort_by_expert, chosen, experts)
            counts = counted.tolist()
        else:
            counts = w.step("dispatch", _counts, chosen, experts).tolist()
        kept = [self._cap(n, stats) for n in counts]
        stats.tokens_per_expert = kept
        hit = [e for e, n in enumerate(kept) if n]
        if chosen.is_meta:
            return {e: w.step("dispatch", _balanced, chosen, experts, e) for e in hit}
        if self.dispatch == "sorted":
            starts = [0, *itertools.accumulate(counts)]
            return {e: w.step("dispatch", _kept_rows, token_idx, slot, starts[e], kept[e]) for e in hit}
        pairs = {e: w.step("dispatch", _rows_of, chosen, e) for e in hit}
        return {
            e: w.step("dispatch", _kept_rows, rows, slot, 0, kept[e]) if kept[e] < counts[e] else (rows, slot)
            for e, (rows, slot) in pairs.items()
        }

    @staticmethod
    def _cap(n: int, stats: DispatchStats) -> int:
        """The rows an expert keeps of the n routed to it; the rest are dropped (Switch)."""
        if stats.capacity is not None and n > stats.capacity:
            stats.dropped += n - stats.capacity
            return stats.capacity
        return n

    def _add_shared(self, w: ModuleWeights, tokens: Tensor, routed: Tensor) -> Tensor:
        if self.shared_experts is None:
            return routed
        shared = w.call("shared_experts", tokens)
        if self.shared_expert_gate is not None:
            gate = w.linear("shared_expert_gate", tokens)
            return w.step("shared_expert_gate", _gated_add, gate, shared, routed)  # Qwen2-MoE
        return w.step("shared_add", torch.add, routed, shared)


def _kept_rows(rows: Tensor, slot: Tensor, start: int, n: int) -> tuple[Tensor, Tensor]:
    """The n (token row, slot) pairs from `start` that an expert keeps under its capacity."""
    return rows[start : start + n], slot[start : start + n]


def _gated_add(gate: Tensor, shared: Tensor, routed: Tensor) -> Tensor:
    return routed + torch.sigmoid(gate) * shared


class SoftMoEFFN(_Mixture):
    """The dense mixture: every expert runs on every token, weighted by a softmax gate."""

    def _forward(self, x: Tensor) -> Tensor:
        w = ModuleWeights(self)
        tokens = w.step("flatten", _flatten, x)  # (N, d)
        gates = w.step("softmax", _gates, w.linear("router", tokens), tokens.dtype)  # (N, E)
        out = w.step("combine", torch.zeros_like, tokens)
        for e in range(self.spec.experts):
            expert_out = w.call(f"experts.{e}", tokens)  # (N, d)
            out = w.step("combine", _add_column, out, gates, e, expert_out)
        return w.step("unflatten", _unflatten, out, x.shape)


def _gates(logits: Tensor, dtype: torch.dtype) -> Tensor:
    return router_probs(logits).to(dtype)


def _add_column(out: Tensor, gates: Tensor, e: int, expert_out: Tensor) -> Tensor:
    return out + gates[:, e : e + 1] * expert_out
