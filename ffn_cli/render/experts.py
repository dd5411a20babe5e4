"""The rows that stand for the elided experts of a large mixture in the trace's tables
(`ffn_cli.tracing.expert_summary` decides which, and adds them up)."""

from __future__ import annotations

from collections.abc import Sequence

from ffn_cli.i18n import _, ngettext
from ffn_cli.tracing.expert_summary import ElidedOps, ExpertSummary, tokens_range
from ffn_cli.tracing.result import TraceStep

__all__ = ["elided_label", "elided_note", "elided_operation", "idle_label", "idle_operation", "ops_note"]


def elided_label(summary: ExpertSummary, steps: Sequence[TraceStep]) -> str:
    """experts.2–4094: the first elided step's name and the last one's index."""
    last = steps[summary.elided_to - 1].name.rsplit(".", 1)[-1]
    return f"{steps[summary.elided_from].name}–{last}"


def elided_operation(summary: ExpertSummary) -> str:
    """The operation cell of the summary row."""
    tokens = tokens_range(summary.tokens).shown()
    if summary.idle:
        text = _("{elided:,} more experts (of {ran:,} that ran); tokens per expert (all {experts:,}): {tokens}")
    else:
        text = _("{elided:,} more experts; tokens per expert (all {experts:,}): {tokens}")
    return text.format(elided=summary.elided, ran=summary.ran, experts=summary.experts, tokens=tokens)


def elided_note(summary: ExpertSummary) -> str:
    """The note of the summary row in the values tables (the statistics are per expert)."""
    return _("{count:,} experts elided; --json has each").format(count=summary.elided)


def idle_label(summary: ExpertSummary) -> str:
    """The step cell of the row for the experts that did not run."""
    return ngettext("idle expert", "idle experts", summary.idle)


def idle_operation(summary: ExpertSummary) -> str:
    """The operation cell (or note) of that row: how many, and why they have no step."""
    # "1 expert got no token", never "idle expert 1 got…", which reads as expert number 1.
    words = ngettext("{count:,} expert got no token and did not run", "{count:,} experts got no token and did not run", summary.idle)
    return words.format(count=summary.idle)


def ops_note(spans: Sequence[ElidedOps], label: str) -> str:
    """The line under the ops table saying what its summary rows stand for."""
    count = sum(s.count for s in spans)
    text = _("{count:,} ops of {label} (routing, dispatch, the experts, combine) are summarised; --json lists every op.")
    return text.format(count=count, label=label)
