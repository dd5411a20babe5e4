"""What a trace returns: frozen value objects, with no tensors in them and no torch needed to
read them (the renderers and `--json` work from these fields alone)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from ffn_cli.i18n import Message
from ffn_cli.spec import FFNSpec

if TYPE_CHECKING:
    from ffn_cli.block import BlockSpec  # imports torch

__all__ = [
    "HISTOGRAM_BINS",
    "LOSSES",
    "BackwardResult",
    "BackwardStep",
    "CheckResult",
    "OpRecord",
    "ParamGrad",
    "ParamInfo",
    "ReferenceMatch",
    "SavedRead",
    "Shape",
    "TensorStats",
    "TraceResult",
    "TraceStep",
    "TracedModule",
    "VariantFit",
    "grad_norm",
    "histogram_edges",
]

Shape = tuple[int, ...]


# Bins of a tensor's histogram: enough to show ReLU's spike at 0 and a normal's bell.
HISTOGRAM_BINS = 20


def histogram_edges(low: float, high: float) -> list[float]:
    """The bin edges numpy.histogram(bins=HISTOGRAM_BINS, range=(low, high)) uses, computed as
    np.linspace computes them (i·step + low, the last edge `high`); one value gets ±0.5 around it."""
    if low == high:
        low, high = low - 0.5, high + 0.5
    step = (high - low) / HISTOGRAM_BINS
    return [i * step + low for i in range(HISTOGRAM_BINS)] + [high]


@dataclass(frozen=True)
class TensorStats:
    """Statistics of one tensor's values, over its finite elements (NaN/Inf counted apart)."""

    numel: int
    mean: float
    std: float
    min: float
    max: float
    zeros: int
    negatives: int
    nan: int
    inf: int
    subnormal: int  # nonzero values below the dtype's smallest normal: precision already lost
    # Counts of the finite values in HISTOGRAM_BINS equal bins from min to max, as numpy.histogram
    # bins them; the page draws it. Not part of --json, nor of equality.
    histogram: tuple[int, ...] | None = field(default=None, compare=False)

    @property
    def zeros_pct(self) -> float:
        return 100.0 * self.zeros / self.numel if self.numel else 0.0

    @property
    def histogram_edges(self) -> list[float] | None:
        """The HISTOGRAM_BINS + 1 edges of `histogram`'s bins."""
        return histogram_edges(self.min, self.max) if self.histogram is not None else None


@dataclass(frozen=True)
class OpRecord:
    """One aten op as it ran: where (module path), what, shapes, FLOPs."""

    index: int
    path: str  # innermost module path; "" is the traced module itself
    op: str  # e.g. "aten.addmm"
    input_shapes: tuple[Shape, ...]
    output_shapes: tuple[Shape, ...]
    dtype: str
    matmul_flops: int
    elementwise_flops: int
    params: tuple[str, ...]  # parameter / buffer names this op read
    constants: tuple[str, ...] = ()  # tensor attributes (neither parameter nor buffer) it read
    function: str = ""  # the torch function call it ran in (`F.gelu`, `x * mask`), when recorded
    weight_grad_flops: int | None = None  # of matmul_flops, the weight's gradient's, for an op that makes two (a convolution's backward)

    @property
    def flops(self) -> int:
        return self.matmul_flops + self.elementwise_flops

    @property
    def name(self) -> str:
        return self.op.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class OutputMember:
    """A tensor a module returned beside the one that flows on: Megatron's bias, a gate's aux loss."""

    where: str  # as Python indexes the output: "[1]", "['aux_loss']"
    shape: Shape
    dtype: str

    def as_dict(self) -> dict[str, object]:
        return {"member": self.where, "shape": list(self.shape), "dtype": self.dtype}


@dataclass(frozen=True)
class ParamInfo:
    """A parameter (or buffer) a step read, by its name in the module's state_dict. A buffer
    (a fixed mask, a running statistic) is state, not a parameter: it is never counted as one."""

    name: str
    shape: Shape
    buffer: bool = False
    reused: bool = False  # an earlier step read it too: counted there, not again here

    @property
    def count(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class TraceStep:
    """One logical step: what it computes, from what, into what, with which weights, at what cost."""

    name: str
    op: str  # the formula, e.g. "x·W_upᵀ + b_up"
    input_shapes: tuple[Shape, ...]
    output_shape: Shape
    output_shapes: tuple[Shape, ...]  # every output a later step consumed
    inputs_from: tuple[str, ...]  # steps (or "input") whose outputs this step consumed
    params: tuple[ParamInfo, ...]
    matmul_flops: int
    elementwise_flops: int
    aten_ops: tuple[str, ...]
    op_indices: tuple[int, ...]  # into TraceResult.ops
    dtype: str
    stats: TensorStats | None = None
    input_stats: TensorStats | None = None
    values: tuple[float, ...] | None = None
    flags: tuple[str, ...] = ()
    # English in --json (str), the reader's language in the tables (shown); a Message is frozen, one default serves all.
    note: Message = Message()  # noqa: RUF009
    dropout_changed: int | None = None
    dropout_zeroed: int | None = None
    tokens_per_expert: tuple[int, ...] | None = None  # a mixture's dispatch: every expert's rows
    idle_params: int = 0  # a mixture's dispatch: parameters of the experts no token reached (no step)
    substeps: tuple[TraceStep, ...] = ()
    constants: tuple[ParamInfo, ...] = ()  # tensor attributes the step read that are not parameters
    module_class: str = ""  # the class of the submodule this step called, when it is one call
    op_words: Message | None = None  # `op` with words in it, to be said in the reader's language
    region: str = ""  # its step in the variant's forward ("activation"), or its module's or call's own name
    part: str = ""  # the block part it is in ("attn", "ffn"); "" outside a block

    @property
    def flops(self) -> int:
        return self.matmul_flops + self.elementwise_flops

    @property
    def param_count(self) -> int:
        """Parameters this step is the first to read (one read again is counted where first read);
        buffers are state, not parameters."""
        return sum(p.count for p in self.params if not p.reused and not p.buffer)

    @property
    def buffers(self) -> tuple[ParamInfo, ...]:
        return tuple(p for p in self.params if p.buffer)


@dataclass(frozen=True)
class CheckResult:
    """The traced FFN against the NumPy float64 reference on the same weights and input."""

    max_rel_error: float  # max |y − y_ref| / max |y_ref|
    threshold: float
    dtype: str

    @property
    def passed(self) -> bool:
        return self.max_rel_error <= self.threshold


@dataclass(frozen=True)
class VariantFit:
    """One registry variant tried against the user's module: its weights placed on the
    variant's layout, the NumPy float64 reference run on them, and how far the outputs are apart."""

    variant: str
    formula: str
    # The module's parameter → the variant's, transposed (stored (in, out)), halves swapped (a
    # fused gate/up matrix stored up first).
    placed: tuple[tuple[str, str, bool, bool], ...]
    max_abs_error: float
    max_rel_error: float  # max |y − y_ref| / max |y_ref|
    # Where the outputs part most: (token, feature, the module's value, the reference's).
    worst: tuple[int, int, float, float]
    parted_fraction: float  # outputs further apart than the threshold allows


@dataclass(frozen=True)
class ReferenceMatch:
    """`--reference`: which registry variant the module computes, if any, or the closest
    candidate and where the outputs part; `reason` when no variant's layout holds its weights."""

    module: str  # the module's class name
    dtype: str
    threshold: float  # the relative error --check accepts for this dtype
    best: VariantFit | None
    tried: int  # layouts tried (variant × biases × fused gate/up × orders)
    reason: str = ""
    note: str = ""  # why the forward ran a second time, when it did

    @property
    def matched(self) -> bool:
        return self.best is not None and self.best.max_rel_error <= self.threshold


@dataclass(frozen=True)
class TracedModule:
    """What was traced, whatever built it: a registry variant, the user's own module, or
    transformers' own FFN module of a model."""

    source: str  # "variant", "module" or "transformers"
    name: str  # the variant, the class, or the model's module path
    class_name: str
    d_model: int
    d_model_from: str  # where the input width came from: "the spec", "--d-model", "linear1.in_features"
    origin: str = ""  # how it was named: "my_ffn.py:TransformerFFN(512, 2048)", "cohere · layer 0"
    notes: tuple[str, ...] = ()
    depth: int = 1  # how deep its submodules became steps
    opened: tuple[str, ...] = ()  # the wrappers and containers opened to reach that depth by default

    def as_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "name": self.name,
            "class": self.class_name,
            "d_model": self.d_model,
            "d_model_from": self.d_model_from,
            "origin": self.origin,
            "notes": list(self.notes),
            "depth": self.depth,
        } | ({"opened": list(self.opened)} if self.opened else {})


@dataclass(frozen=True)
class TraceResult:
    """One traced forward of any module: the run's settings, its steps and raw ops, and the
    totals. `spec` is there when a registry variant was traced (for its formulas and checks)."""

    module: TracedModule
    spec: FFNSpec | None
    block: BlockSpec | None
    batch: int
    seq_len: int
    device: str
    dtype: str
    mode: str
    seed: int
    input_shape: Shape
    output_shape: Shape
    input_stats: TensorStats | None
    input_values: tuple[float, ...] | None
    steps: tuple[TraceStep, ...]
    ops: tuple[OpRecord, ...]
    param_groups: tuple[tuple[str, int], ...]  # parameters by top-level part: up_proj, experts, attn…
    saved_bytes: int  # autograd's saved tensors in this run, parameters excluded
    activation_bytes_estimate: int | None  # accounting's per-token estimate × tokens × dtype bytes (a spec's)
    check: CheckResult | None = None
    backward: BackwardResult | None = None  # with --backward
    reference: ReferenceMatch | None = None  # with --reference
    warnings: tuple[Message, ...] = ()  # what the run shows is likely not meant (two linears that collapse into one)
    unread_params: tuple[ParamInfo, ...] = ()  # the module's parameters no op of the run read (counted, not used)
    output_member: str = ""  # where the tensor that flows on sat in a tuple / dict output ("" : the output itself)
    other_outputs: tuple[OutputMember, ...] = ()  # the output's other tensors, listed, not followed

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    @property
    def total_params(self) -> int:
        return sum(n for _, n in self.param_groups)

    @cached_property  # read once per table row: a sum per read is quadratic in thousands of experts
    def total_flops(self) -> int:
        return sum(s.flops for s in self.steps)

    @property
    def matmul_flops(self) -> int:
        return sum(op.matmul_flops for op in self.ops)

    @property
    def elementwise_flops(self) -> int:
        return sum(op.elementwise_flops for op in self.ops)

    @property
    def is_meta(self) -> bool:
        return self.device == "meta"

    def part_flops(self, part: str) -> int:
        """FLOPs of the steps under one block part ("attn", "ffn")."""
        return sum(s.flops for s in self.steps if s.part == part)


# the backward (`ffn trace --backward`) ------------------------------------------------------

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
    part: bool = False  # part of a larger tensor (a chunk's half): bytes_ is the whole's, which it keeps alive


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
    expert: int | None = None  # a mixture's parameter: the expert it belongs to

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
