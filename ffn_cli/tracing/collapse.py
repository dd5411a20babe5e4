"""Two linear maps with nothing nonlinear between them are one linear map.

The seed tutorial's point about the FFN: without the activation, W₂·(W₁·x) = (W₂·W₁)·x, a
single matrix of rank at most the narrower width, so the wide hidden layer adds parameters and
FLOPs but nothing one matrix could not compute. Found from the steps' ops alone (aten ops or torch calls): a step
that is one matmul (with its bias add and layout changes) is affine; dropout and layout-only
steps pass values through; anything else (an activation, a norm, a gate's product) ends the chain.

A low-rank pair whose product is added to a full-rank path (LoRA's B·A beside the frozen
weight, an adapter beside a residual) is low rank on purpose: it is not warned.
"""

from __future__ import annotations

from collections.abc import Sequence

from ffn_cli.i18n import N_, Message
from ffn_cli.tracing.ops import LAYOUT_OPS, SKIPPED_OPS, op_base
from ffn_cli.tracing.result import TraceStep

__all__ = ["linear_collapses"]

_MATMULS = {"mm", "addmm", "matmul", "bmm", "baddbmm", "linear", "einsum"}
_LAYOUT = {*LAYOUT_OPS, "permute"}  # an einsum's aten ops move axes around its bmm
_BIAS = {"add", "add_", "sub", "sub_"}  # a bias added to a matmul's output keeps the map affine
# Dropout's own ops: a mask drawn (into uninitialised memory), scaled, multiplied in.
_DROPOUT = {"native_dropout", "dropout", "bernoulli_", "empty_like", "div", "div_", "mul"}


def _affine(step: TraceStep) -> bool:
    ops = [op_base(o) for o in step.aten_ops]
    matmuls = [o for o in ops if o in _MATMULS]
    # An einsum is linear in x when its other operand is a weight (not x itself: `btd,btd->bt`).
    weighted = "einsum" not in matmuls or (bool(step.params) and len(step.inputs_from) == 1)
    return len(matmuls) == 1 and weighted and all(o in _MATMULS or o in _BIAS or o in _LAYOUT or o in SKIPPED_OPS for o in ops)


def _passes_through(step: TraceStep) -> bool:
    """A step that changes no value's linear relation to its input: layout only, or dropout
    (eval: nothing; train: a fixed mask and a scale)."""
    ops = [op_base(o) for o in step.aten_ops]
    if not ops:
        return True
    dropout = step.module_class == "Dropout" or "native_dropout" in ops or "bernoulli_" in ops
    layout = set(LAYOUT_OPS) | set(SKIPPED_OPS) | {"alias", "contiguous"}
    return all(o in layout for o in ops) or (dropout and all(o in layout | _DROPOUT for o in ops))


def linear_collapses(steps: Sequence[TraceStep], input_width: int) -> tuple[Message, ...]:
    """A warning for each chain of two or more affine steps, one feeding the next, with only
    pass-through steps between: together they are one linear map."""
    chains: list[list[TraceStep]] = []
    current: list[TraceStep] = []
    previous = "input"
    for step in steps:
        follows = step.inputs_from == (previous,)
        if _affine(step):
            if not (current and follows):
                chains.append(current)
                current = []
            current.append(step)
        elif not (current and follows and _passes_through(step)):
            chains.append(current)
            current = []
        previous = step.name
    chains.append(current)
    return tuple(_said(chain, input_width) for chain in chains if len(chain) >= 2 and not _an_adapter(chain, steps))


def _scales_only(step: TraceStep) -> bool:
    """A step that multiplies (or divides) one tensor by constants: LoRA's alpha / r."""
    ops = [op_base(o) for o in step.aten_ops]
    return len(step.inputs_from) == 1 and bool(ops) and all(o in {"mul", "div"} or o in LAYOUT_OPS for o in ops)


def _an_adapter(chain: list[TraceStep], steps: Sequence[TraceStep]) -> bool:
    """Whether the chain narrows below both its ends (low rank by design) and its result, scaled
    at most, is added to a full-rank path: one affine step or the input itself (a residual)."""
    inner = [s.output_shape[-1] for s in chain[:-1] if s.output_shape]
    ends = [s.output_shape[-1] for s in (chain[-1],) if s.output_shape]
    first = chain[0].input_shapes[0] if chain[0].input_shapes else ()
    if not (inner and ends and first and min(inner) < min(first[-1], ends[0])):
        return False
    by_name = {s.name: s for s in steps}
    result = chain[-1].name
    for step in steps[steps.index(chain[-1]) + 1 :]:
        if step.inputs_from == (result,) and _scales_only(step):
            result = step.name
        elif result in step.inputs_from and len(step.inputs_from) == 2 and {op_base(o) for o in step.aten_ops} <= {"add", "add_"}:
            other = next(name for name in step.inputs_from if name != result)
            return other == "input" or (other in by_name and _affine(by_name[other]))
    return False


def _said(chain: list[TraceStep], input_width: int) -> Message:
    first = chain[0].input_shapes[0] if chain[0].input_shapes else ()
    widths = [first[-1] if first else input_width, *(s.output_shape[-1] for s in chain if s.output_shape)]
    if min(widths) < min(widths[0], widths[-1]):  # a narrow layer between: the one map is low rank too
        said = N_(
            "{names}: linear maps with nothing nonlinear between them, so together they are one linear map "
            "({d_in} → {d_out}) of rank at most {rank}; the hidden widths add parameters and FLOPs, not capacity"
        )
    else:  # any map d_in → d_out has rank at most the narrower: not worth saying
        said = N_(
            "{names}: linear maps with nothing nonlinear between them, so together they are one linear map "
            "({d_in} → {d_out}); the hidden width adds parameters and FLOPs, not capacity"
        )
    return Message.of(
        said,
        names=", ".join(s.name for s in chain),
        d_in=widths[0],
        d_out=widths[-1],
        rank=min(widths),
    )
