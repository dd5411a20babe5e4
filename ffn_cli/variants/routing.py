"""The torch side of a mixture's forward: routing, dispatch and combine, written once.

The variants' forwards (`moe.py`, `soft_moe.py`) run these through `Weights.step`, so the
one-device module and an expert-parallel rank choose, weight, drop and add up exactly the
same rows. The only module of the registry that imports torch at its top: the variants import
it inside the methods that compute, so the registry itself stays torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = [
    "add",
    "add_column",
    "balanced_rows",
    "balanced_share",
    "capacity",
    "counts",
    "flatten",
    "gated_add",
    "gather",
    "kept_rows",
    "route",
    "router_probs",
    "rows_of",
    "soft_gates",
    "sort_by_expert",
    "unflatten",
    "weighted_add",
    "zeros_like",
]

Step = Callable[..., Any]

zeros_like = torch.zeros_like
add = torch.add


def _run(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def flatten(x: Tensor) -> Tensor:
    return x.reshape(-1, x.shape[-1])  # (B, T, d) → (N, d)


def unflatten(out: Tensor, shape: torch.Size) -> Tensor:
    return out.reshape(shape)


# --- routing ---------------------------------------------------------------------------------


def router_probs(logits: Tensor) -> Tensor:
    """softmax over experts, in float32 even under bf16 (as Mixtral); float64 runs stay float64."""
    return torch.softmax(logits, dim=-1, dtype=torch.promote_types(logits.dtype, torch.float32))


def _top_k(probs: Tensor, k: int) -> tuple[Tensor, Tensor]:
    weights, chosen = torch.topk(probs, k, dim=-1)  # (N, k) each
    return weights, chosen


def _renormalise(weights: Tensor, dtype: torch.dtype) -> Tensor:
    return (weights / weights.sum(dim=-1, keepdim=True)).to(dtype)


def _cast(weights: Tensor, dtype: torch.dtype) -> Tensor:
    return weights.to(dtype)


def route(spec: FFNShape, probs: Tensor, dtype: torch.dtype, step: Step = _run) -> tuple[Tensor, Tensor]:
    """(weights (N, k) in `dtype`, chosen experts (N, k)): top-k of the router's probabilities,
    renormalised to sum to 1 when the spec says so (Mixtral)."""
    weights, chosen = step("top_k", _top_k, probs, spec.top_k)
    if spec.normalize_top_k:
        return step("renormalise", _renormalise, weights, dtype), chosen
    return step("top_k", _cast, weights, dtype), chosen


def capacity(spec: FFNShape, n_tokens: int) -> int | None:
    """Rows one expert may take (Switch's capacity factor), from all the tokens of the forward."""
    if spec.capacity_factor is None:
        return None
    return math.ceil(spec.capacity_factor * n_tokens * spec.top_k / spec.experts)


def soft_gates(logits: Tensor, dtype: torch.dtype) -> Tensor:
    """The soft mixture's gates: the router's softmax, cast back to the run's dtype."""
    return router_probs(logits).to(dtype)


# --- dispatch --------------------------------------------------------------------------------


def sort_by_expert(chosen: Tensor, experts: int) -> tuple[Tensor, Tensor, Tensor]:
    """(token index, slot, rows per expert) of every (token, slot) pair, sorted by expert and,
    within one expert, by token: the order capacity drops rows in."""
    k = chosen.shape[-1]
    flat = chosen.reshape(-1)  # (N·k,), token-major
    order = torch.argsort(flat, stable=True)
    counted = torch.bincount(flat, minlength=experts)  # (E,)
    return order // k, order % k, counted


def counts(chosen: Tensor, experts: int) -> Tensor:
    return torch.bincount(chosen.flatten(), minlength=experts)  # (E,): pairs per expert


def rows_of(chosen: Tensor, expert: int) -> tuple[Tensor, Tensor]:
    rows, slot = torch.where(chosen == expert)  # row-major: token order
    return rows, slot


def kept_rows(rows: Tensor, slot: Tensor, start: int, n: int) -> tuple[Tensor, Tensor]:
    """The n (token row, slot) pairs from `start` that an expert keeps under its capacity."""
    return rows[start : start + n], slot[start : start + n]


def balanced_share(pairs: int, experts: int, expert: int) -> int:
    """Meta tensors have no values to route by: the N·k (token, expert) pairs are spread as
    evenly as they go, the first pairs mod E experts taking one more, so the shares sum to N·k."""
    share, extra = divmod(pairs, experts)
    return share + (1 if expert < extra else 0)


def balanced_rows(chosen: Tensor, experts: int, expert: int) -> tuple[Tensor, Tensor]:
    n = balanced_share(chosen.numel(), experts, expert)
    return torch.arange(n, device=chosen.device), torch.zeros(n, dtype=torch.long, device=chosen.device)


def gather(tokens: Tensor, rows: Tensor) -> Tensor:
    return tokens[rows]  # (n_e, d)


# --- combine ---------------------------------------------------------------------------------


def weighted_add(out: Tensor, rows: Tensor, expert_out: Tensor, weights: Tensor, slot: Tensor) -> Tensor:
    return out.index_add(0, rows, expert_out * weights[rows, slot].unsqueeze(-1))


def gated_add(gate: Tensor, shared: Tensor, routed: Tensor) -> Tensor:
    return routed + torch.sigmoid(gate) * shared


def add_column(out: Tensor, gates: Tensor, e: int, expert_out: Tensor) -> Tensor:
    return out + gates[:, e : e + 1] * expert_out
