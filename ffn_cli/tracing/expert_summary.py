"""Which experts a trace shows in full, and what the rest add up to.

A mixture with thousands of experts would print thousands of identical rows. Up to
`SHOW_ALL_UP_TO` experts that ran (Mixtral's 8, the default's 8, a 16-expert layer) every one is
shown; beyond, the first `SHOW_FIRST` and the last `SHOW_LAST`, and one summary of those between:
how many, how many tokens each received, and their summed parameters and FLOPs. An expert no
token chose does not run, so it has no step: the idle ones are one more row, with their
parameters and no FLOPs, so that the table's columns still add up to its total. The data itself
(`TraceResult.steps`, `--json`) keeps every expert that ran; this is only what a table shows.
Pure Python: no torch.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ffn_cli.i18n import N_, Message
from ffn_cli.tracing.result import OpRecord, Shape, TraceStep

if TYPE_CHECKING:
    from ffn_cli.tracing.result import BackwardStep

__all__ = [
    "SHOW_ALL_UP_TO",
    "SHOW_FIRST",
    "SHOW_LAST",
    "ElidedBackward",
    "ElidedOps",
    "ExpertSummary",
    "describe_tokens",
    "elided_backward",
    "elided_ops",
    "expert_run",
    "summarise_experts",
    "tokens_range",
]

# Every expert is shown up to this many: the default (8), Mixtral (8) and a 16-expert layer.
SHOW_ALL_UP_TO = 16
# Beyond it, the first experts and the last ones are shown in full, the others summarised.
SHOW_FIRST = 2
SHOW_LAST = 1


@dataclass(frozen=True)
class ExpertSummary:
    """The experts of one mixture: where their steps sit among the trace's steps, which are
    elided, and the elided ones' totals."""

    first: int  # index in `steps` of the first expert step
    ran: int  # how many expert steps: the experts that ran, all of them
    elided_from: int  # index in `steps` of the first elided expert step
    elided_to: int  # one past the last elided expert step (== elided_from: none elided)
    tokens: tuple[int, ...]  # rows each expert received, every expert (idle ones too), in expert order
    elided_params: int
    elided_flops: int
    elided_matmul_flops: int
    elided_elementwise_flops: int
    elided_shapes: tuple[Shape, ...]  # distinct input shapes of the elided experts
    idle_params: int = 0  # parameters of the experts that got no token and did not run

    @property
    def experts(self) -> int:
        """Every expert of the mixture, those that did not run included."""
        return len(self.tokens)

    @property
    def elided(self) -> int:
        return self.elided_to - self.elided_from

    @property
    def end(self) -> int:
        """One past the last expert step in `steps`."""
        return self.first + self.ran

    @property
    def tokens_min(self) -> int:
        return min(self.tokens)

    @property
    def tokens_median(self) -> float:
        return float(statistics.median(self.tokens))

    @property
    def tokens_max(self) -> int:
        return max(self.tokens)

    @property
    def idle(self) -> int:
        """Experts that received no token: they did not run."""
        return sum(1 for t in self.tokens if t == 0)

    @property
    def idle_experts(self) -> tuple[int, ...]:
        return tuple(e for e, t in enumerate(self.tokens) if t == 0)

    def is_elided(self, step_index: int) -> bool:
        return self.elided_from <= step_index < self.elided_to


def describe_tokens(tokens: Sequence[int]) -> Message:
    """Tokens per expert, in a line whatever the count: each one up to SHOW_ALL_UP_TO experts,
    else min / median / max and how many experts got none."""
    if len(tokens) <= SHOW_ALL_UP_TO:
        return Message.of(N_("tokens per expert: {tokens}"), tokens=", ".join(str(t) for t in tokens))
    return Message.of(N_("tokens per expert: {range} (of {experts:,} experts)"), range=tokens_range(tokens), experts=len(tokens))


def tokens_range(tokens: Sequence[int]) -> Message:
    """min 1, median 1, max 1; 0 got none."""
    idle = sum(1 for t in tokens if t == 0)
    median = f"{statistics.median(tokens):,.4g}"
    text = N_("min {min:,}, median {median}, max {max:,}; {idle:,} got none")
    return Message.of(text, min=min(tokens), median=median, max=max(tokens), idle=idle)


def expert_run(steps: Sequence[TraceStep]) -> tuple[int, int] | None:
    """(first, end) indices of the consecutive expert steps (those with substeps: an expert is
    a whole sub-FFN), or None for a trace without experts."""
    first = next((i for i, s in enumerate(steps) if s.substeps), None)
    if first is None:
        return None
    end = first
    while end < len(steps) and steps[end].substeps:
        end += 1
    return first, end


def _tokens(steps: Sequence[TraceStep], first: int, end: int) -> tuple[int, ...]:
    """Rows per expert, every expert: the dispatch step's count where the mixture routes (the
    experts that did not run included), else each expert's input rows (soft MoE: every token)."""
    dispatch = next((s.tokens_per_expert for s in steps if s.tokens_per_expert is not None), None)
    if dispatch is not None:
        return tuple(dispatch)
    return tuple(s.input_shapes[0][0] if s.input_shapes and s.input_shapes[0] else 0 for s in steps[first:end])


def summarise_experts(steps: Sequence[TraceStep]) -> ExpertSummary | None:
    """The summary of a trace with more than SHOW_ALL_UP_TO experts that ran, or with experts
    that did not; None when every expert ran and all are shown."""
    run = expert_run(steps)
    if run is None:
        return None
    first, end = run
    tokens = _tokens(steps, first, end)
    idle_params = next((s.idle_params for s in steps if s.tokens_per_expert is not None), 0)
    if end - first <= SHOW_ALL_UP_TO:
        if 0 not in tokens:
            return None
        elided_from = elided_to = end
    else:
        elided_from, elided_to = first + SHOW_FIRST, end - SHOW_LAST
    elided = steps[elided_from:elided_to]
    return ExpertSummary(
        first=first,
        ran=end - first,
        elided_from=elided_from,
        elided_to=elided_to,
        tokens=tokens,
        elided_params=sum(s.param_count for s in elided),
        elided_flops=sum(s.flops for s in elided),
        elided_matmul_flops=sum(s.matmul_flops for s in elided),
        elided_elementwise_flops=sum(s.elementwise_flops for s in elided),
        elided_shapes=tuple(dict.fromkeys(shape for s in elided for shape in s.input_shapes)),
        idle_params=idle_params,
    )


@dataclass(frozen=True)
class ElidedOps:
    """A run of consecutive ops, [start, end) positions in `TraceResult.ops`, that belong to the
    elided experts (their routing, their dispatch, the expert itself, their combine)."""

    start: int
    end: int
    matmul_flops: int
    elementwise_flops: int

    @property
    def count(self) -> int:
        return self.end - self.start


def elided_ops(ops: Sequence[OpRecord], steps: Sequence[TraceStep], summary: ExpertSummary) -> tuple[ElidedOps, ...]:
    """The op runs the ops table summarises, in order.

    In execution order each expert's work is one run: its dispatch (gather), its own ops, its
    combine. So the elided experts' runs form one span, from the first op after the last shown
    leading expert and its combine to the last op before the first shown trailing expert and
    its dispatch. A routing that looks each expert up in turn before any runs (on cpu and cuda:
    `eq`, `nonzero`, `unbind` per expert) is a second span, cut at its period.
    """
    if not summary.elided:
        return ()
    step_of = {i: s.name for s in steps for i in s.op_indices}
    position = {op.index: p for p, op in enumerate(ops)}

    def first_op(step: TraceStep) -> int:
        return min(position[i] for i in step.op_indices)

    def step_at(p: int) -> str | None:
        return step_of.get(ops[p].index)

    end_of_run = summary.end
    after = steps[end_of_run].name if end_of_run < len(steps) else None
    before = steps[summary.first - 1].name if summary.first > 0 else None
    start = max(position[i] for i in steps[summary.elided_from - 1].op_indices) + 1
    while start < len(ops) and step_at(start) == after:
        start += 1
    end = first_op(steps[summary.elided_to])
    while end > start and step_at(end - 1) == before:
        end -= 1
    # Expert 0's own gather comes right before it, as many ops as come right before expert 1.
    second = first_op(steps[summary.first + 1])
    gather = 0
    while gather < second and step_at(second - 1 - gather) == before:
        gather += 1
    routing = _periodic(ops, [step_at(p) == before for p in range(len(ops))], first_op(steps[summary.first]) - gather, summary.ran)
    spans = [_span(ops, start, end)]
    return tuple([routing, *spans] if routing else spans)


def _periodic(ops: Sequence[OpRecord], in_step: list[bool], stop: int, experts: int) -> ElidedOps | None:
    """The middle of the run of ops ending at `stop` (all in one step) that repeats one pattern
    of ops once per expert, or None if there is no such run."""
    begin = stop
    while begin > 0 and in_step[begin - 1]:
        begin -= 1
    names = [op.op for op in ops[begin:stop]]
    for period in range(1, len(names) // experts + 1):
        run = names[len(names) - period * experts :]
        if all(run[p] == run[p % period] for p in range(len(run))):
            first = stop - period * experts
            return _span(ops, first + SHOW_FIRST * period, stop - SHOW_LAST * period)
    return None


def _span(ops: Sequence[OpRecord], start: int, end: int) -> ElidedOps:
    run = ops[start:end]
    return ElidedOps(start, end, sum(op.matmul_flops for op in run), sum(op.elementwise_flops for op in run))


@dataclass(frozen=True)
class ElidedBackward:
    """The backward steps of the elided experts, [start, end) positions in
    `BackwardResult.steps`, and the parameters whose gradients they made."""

    start: int
    end: int
    weight_grad_flops: int
    input_grad_flops: int
    elementwise_flops: int
    params: frozenset[str]

    @property
    def count(self) -> int:
        return self.end - self.start


def elided_backward(backward: Sequence[BackwardStep], steps: Sequence[TraceStep], summary: ExpertSummary) -> ElidedBackward | None:
    """The elided experts' backward steps. Autograd runs each expert's backward as one run, in
    reverse: its combine, the expert, its dispatch; so the elided experts' runs form one span,
    from the combine before the first elided expert met to the dispatch after the last."""
    elided = {steps[i].name for i in range(summary.elided_from, summary.elided_to)}
    positions = [p for p, s in enumerate(backward) if s.of in elided]
    if not positions:
        return None
    end_of_run = summary.end
    combine = steps[end_of_run].name if end_of_run < len(steps) else None
    dispatch = steps[summary.first - 1].name if summary.first > 0 else None
    start, end = positions[0], positions[-1] + 1
    while start > 0 and backward[start - 1].of == combine:
        start -= 1
    while end < len(backward) and backward[end].of == dispatch:
        end += 1
    run = backward[start:end]
    return ElidedBackward(
        start,
        end,
        sum(s.weight_grad_flops for s in run),
        sum(s.input_grad_flops for s in run),
        sum(s.elementwise_flops for s in run),
        frozenset(p.name for s in run for p in s.weight_grads),
    )
