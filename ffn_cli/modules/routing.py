"""Top-k routing, written once: the one-device MoE module and the expert-parallel ranks both
route with these functions, so they choose, weight and drop exactly the same rows."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ffn_cli.spec import FFNSpec

__all__ = ["capacity", "route", "router_probs", "sort_by_expert"]

Step = Callable[..., Any]


def _run(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


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


def route(spec: FFNSpec, probs: Tensor, dtype: torch.dtype, step: Step = _run) -> tuple[Tensor, Tensor]:
    """(weights (N, k) in `dtype`, chosen experts (N, k)): top-k of the router's probabilities,
    renormalised to sum to 1 when the spec says so (Mixtral)."""
    weights, chosen = step("top_k", _top_k, probs, spec.top_k)
    if spec.normalize_top_k:
        return step("renormalise", _renormalise, weights, dtype), chosen
    return step("top_k", _cast, weights, dtype), chosen


def capacity(spec: FFNSpec, n_tokens: int) -> int | None:
    """Rows one expert may take (Switch's capacity factor), from all the tokens of the forward."""
    if spec.capacity_factor is None:
        return None
    return math.ceil(spec.capacity_factor * n_tokens * spec.top_k / spec.experts)


def sort_by_expert(chosen: Tensor, experts: int) -> tuple[Tensor, Tensor, Tensor]:
    """(token index, slot, rows per expert) of every (token, slot) pair, sorted by expert and,
    within one expert, by token: the order capacity drops rows in."""
    k = chosen.shape[-1]
    flat = chosen.reshape(-1)  # (N·k,), token-major
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=experts)  # (E,)
    return order // k, order % k, counts
