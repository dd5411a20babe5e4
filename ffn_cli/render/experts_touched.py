"""How many distinct experts a traced MoE forward's real router chose, beside what uniform
routing would touch in expectation, E·(1 − (1 − k/E)^T)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ffn_cli.costs.roofline.bound import expected_distinct_experts
from ffn_cli.i18n import _

__all__ = ["experts_touched_data", "experts_touched_note"]


def experts_touched_data(spec: Any, tokens_per_expert: tuple[int, ...] | None, tokens: int) -> dict[str, Any] | None:
    """None unless a routed (top-k) mixture ran with values: on meta the spread is assumed, not chosen."""
    if tokens_per_expert is None or not getattr(spec, "top_k", 0) or not getattr(spec, "experts", 0):
        return None

    touched = sum(1 for n in tokens_per_expert if n > 0)
    expected = expected_distinct_experts(spec.experts, spec.top_k, tokens)
    return {"experts": spec.experts, "top_k": spec.top_k, "tokens": tokens, "touched": touched, "uniform_expected": expected}


def experts_touched_note(data: dict[str, Any]) -> Text:
    e, k, t = data["experts"], data["top_k"], data["tokens"]
    text = _(
        "experts touched: {touched} of {experts} by {tokens:,} tokens (top-{k}); uniform routing would touch "
        "{formula} = {expected} in expectation (ffn params --gpu reads that many)"
    )
    formula = f"{e}·(1−(1−{k}/{e})^{t})"  # no space inside: the formula wraps only whole
    expected = f"{data['uniform_expected']:.3g}"
    return Text(text.format(touched=data["touched"], experts=e, tokens=t, k=k, formula=formula, expected=expected), style="dim")
