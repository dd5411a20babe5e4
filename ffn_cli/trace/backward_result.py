"""What `ffn trace --backward` returns beside the forward: the backward steps in the order
autograd ran them, each parameter's gradient, and the totals. Frozen, tensor-free, torch-free."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from ffn_cli.trace.result import CheckResult, ParamInfo, Shape, TensorStats

__all__ = ["LOSSES", "BackwardResult", "BackwardStep", "ParamGrad", "SavedRead", "grad_norm"]

# How the output gradient dL/dy is made: a seeded standard normal (the default), L = Σy (dy = 1),
# or L = mean((y − t)²) against a seeded standard-normal target t (dy = 2·(y − t)/numel).
LOSSES = ("random", "sum", "mse")


def grad_norm(stats: TensorStats | None) -> float | None:
    """‖g‖₂ from the statistics: Σg² = n·(std² + mean²) over the finite values; NaN if any are not."""
    if stats is None:
        return None
    if stats.nan or stats.inf:
        return math.nan
    return math.sqrt(stats.numel * (stats.std**2 + stats.mean**2))


@dataclass(frozen=True)
class SavedRead:
    """A tensor autograd kept in the forward that a backward step reads, and the forward step
    that produced it ("input" for x)."""

    saved_by: str
    shape: Shape
    dtype: str
    bytes_: int
    recomputed: bool = False  # not kept: --checkpoint recomputed it in the backward (bytes_ 0)


@dataclass(frozen=True)
class BackwardStep:
    """The ops autograd ran, in a row, for one forward step (or to recompute it, under --checkpoint)."""

    of: str  # the forward step this is the backward of (or recomputes)
    recompute: bool
    grad_in: tuple[Shape, ...]  # gradients from earlier backward steps (or dL/dy)
    grad_out: tuple[Shape, ...]  # gradients later backward steps read (or dL/dx)
    inputs_from: tuple[int, ...]  # 1-based backward step numbers; 0 is dL/dy
    weight_grads: tuple[ParamInfo, ...]  # parameters whose gradient this step made
    params_read: tuple[str, ...]  # parameters it multiplied by (W in dx = dy·W)
    reads: tuple[SavedRead, ...]
    weight_grad_flops: int  # matmuls whose output is a parameter's gradient: dW = dyᵀ·x
    input_grad_flops: int  # every other matmul: dx = dy·W, attention's activation gradients
    elementwise_flops: int
    aten_ops: tuple[str, ...]
    op_indices: tuple[int, ...]
    dtype: str
    stats: TensorStats | None = None  # the gradient it hands on
    flags: tuple[str, ...] = ()
    note: str = ""

    @property
    def matmul_flops(self) -> int:
        return self.weight_grad_flops + self.input_grad_flops

    @property
    def flops(self) -> int:
        return self.matmul_flops + self.elementwise_flops

    @property
    def saved_bytes(self) -> int:
        return sum(r.bytes_ for r in self.reads)


@dataclass(frozen=True)
class ParamGrad:
    """One parameter's gradient after the backward, and the backward step that made it."""

    name: str
    shape: Shape
    stats: TensorStats | None
    step: int | None  # 1-based backward step number
    flags: tuple[str, ...] = ()

    @property
    def norm(self) -> float | None:
        return grad_norm(self.stats)


@dataclass(frozen=True)
class BackwardResult:
    """One recorded backward of the traced module, for the output gradient `loss` makes."""

    loss: str
    steps: tuple[BackwardStep, ...]
    params: tuple[ParamGrad, ...]
    output_grad: TensorStats | None  # dL/dy
    input_grad: TensorStats | None  # dL/dx
    checkpoint: bool
    saved_bytes: int  # what the steps read, each storage once
    peak_bytes: int | None  # tensors alive at the worst moment of the backward
    start_bytes: int | None  # tensors alive when the backward began
    check: CheckResult | None = None

    @cached_property  # the totals are read once per table cell: a sum per read is quadratic in steps
    def model_steps(self) -> tuple[BackwardStep, ...]:
        return tuple(s for s in self.steps if not s.recompute)

    @cached_property
    def flops(self) -> int:
        """Model FLOPs: the backward proper, without recomputation."""
        return sum(s.flops for s in self.model_steps)

    @cached_property
    def weight_grad_flops(self) -> int:
        return sum(s.weight_grad_flops for s in self.model_steps)

    @cached_property
    def input_grad_flops(self) -> int:
        return sum(s.input_grad_flops for s in self.model_steps)

    @cached_property
    def recompute_flops(self) -> int:
        return sum(s.flops for s in self.steps if s.recompute)

    @cached_property
    def matmul_flops(self) -> int:
        """Every matmul the backward ran, recomputation included (what FlopCounterMode counts)."""
        return sum(s.matmul_flops for s in self.steps)

    def grad_norm(self, prefix: str = "") -> float:
        """‖∇θ‖₂ over the parameters whose names start with `prefix` ("ffn.", "attn.")."""
        squares = [p.norm**2 for p in self.params if p.name.startswith(prefix) and p.norm is not None]
        return math.sqrt(sum(squares))
