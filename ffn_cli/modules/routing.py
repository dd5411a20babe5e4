"""Top-k routing, as the mixtures' forward runs it (`variants/routing.py`), for callers that
route tensors of their own."""

from __future__ import annotations

from ffn_cli.variants.routing import capacity, route, router_probs, sort_by_expert

__all__ = ["capacity", "route", "router_probs", "sort_by_expert"]
