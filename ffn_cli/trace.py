"""Run an FFN (or its block) under a recorder and report what it did, step by step.

`Recorder` is a TorchDispatchMode: it sees every aten op, functional ones included (the
activation, the gate multiply, MoE's top-k and index_add), and works on the meta device.
Forward hooks keep a stack of module paths so each op is attributed to `up_proj`,
`experts.3.gate_proj`, …; tensor storages link each op to the op that produced its inputs.
`group_steps` then folds the ops into the variant's logical steps. Nothing is printed from
inside a forward: shapes, FLOPs and statistics all come from the recording.

FLOPs: matmuls use torch.utils.flop_counter's registered formulas (2·m·n·k, the same numbers
FlopCounterMode reports); elementwise ops use the per-element conventions of `accounting`
(ELEMENTWISE_FLOPS below). Data movement, indexing and comparisons count 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

from ffn_cli.accounting import DTYPE_BYTES, activation_elements_per_token, total_params
from ffn_cli.block import BlockSpec, SelfAttention, TransformerBlock, build_block
from ffn_cli.device import preflight, resolve_device_dtype
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.modules import DenseFFN, GatedFFN, MoEFFN, SoftMoEFFN, build_ffn
from ffn_cli.reference import reference_forward
from ffn_cli.spec import FFNSpec, check_int
from ffn_cli.variants import ACTIVATIONS

__all__ = [
    "CHECK_THRESHOLDS",
    "MODES",
    "CheckResult",
    "OpRecord",
    "ParamInfo",
    "Recorder",
    "Recording",
    "TensorStats",
    "TraceResult",
    "TraceStep",
    "check_failure",
    "estimate_bytes",
    "group_steps",
    "record",
    "tensor_stats",
    "trace",
]

Shape = tuple[int, ...]
# Who produced a tensor: ("op", i), ("call", i) or ("input", 0).
Producer = tuple[str, int]

MODES = ("eval", "train")
MAX_VALUES = 64
# Max |y − y_ref| / max |y_ref| that --check accepts, by dtype: a few units of the format's
# rounding (float16 ε ≈ 1e-3, bfloat16 ε ≈ 8e-3) after d_ff-long sums.
CHECK_THRESHOLDS = {"float64": 1e-10, "float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}
LOW_PRECISION = (torch.float16, torch.bfloat16)

# Operations per output element (our convention, shared with accounting.ACTIVATIONS).
ELEMENTWISE_FLOPS: dict[str, int] = {
    **dict.fromkeys(("add", "sub", "mul", "div", "neg", "pow", "rsqrt", "sqrt", "exp", "tanh", "abs", "maximum", "minimum"), 1),
    "relu": ACTIVATIONS["relu"].flops_per_element,
    "silu": ACTIVATIONS["silu"].flops_per_element,
    "sigmoid": ACTIVATIONS["sigmoid"].flops_per_element,
    "_softmax": 3,  # exp, sum, divide (accounting.SOFTMAX_FLOPS_PER_ELEMENT)
    "native_dropout": 2,  # mask and rescale, as the CPU path's div_ + mul
    "native_layer_norm": 7,  # mean, centre, square, variance, normalise, scale, shift
}
# Reductions cost one operation per input element.
REDUCTION_OPS = ("sum", "mean")
LAYOUT_OPS = ("view", "_unsafe_view", "reshape", "_reshape_alias", "t", "transpose", "expand", "unsqueeze", "squeeze", "clone")
SPLIT_OPS = ("split", "split_with_sizes", "chunk", "unsafe_split")
# Allocations whose values are whatever memory held: no statistics (they would show garbage).
UNINITIALISED_OPS = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided")
# Autograd bookkeeping and metadata queries that are not part of the forward computation.
SKIPPED_OPS = ("detach", "promote_types", "lift_fresh")


# --- value statistics ---------------------------------------------------------------------


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

    @property
    def zeros_pct(self) -> float:
        return 100.0 * self.zeros / self.numel if self.numel else 0.0


def tensor_stats(t: Tensor) -> TensorStats | None:
    """Stats of a real floating tensor, computed on its device; None for meta, integer or empty."""
    if t.is_meta or not t.is_floating_point() or t.numel() == 0:
        return None
    x = t.detach()
    xf = x.float() if x.dtype in LOW_PRECISION else x
    nan, inf = int(torch.isnan(xf).sum()), int(torch.isinf(xf).sum())
    finite = xf[torch.isfinite(xf)] if nan or inf else xf.reshape(-1)
    tiny = torch.finfo(x.dtype).tiny
    counts = torch.stack([(xf == 0).sum(), (xf < 0).sum(), ((xf != 0) & (xf.abs() < tiny)).sum()]).tolist()
    if finite.numel():
        std, mean = torch.std_mean(finite.double(), correction=0)
        low, high = torch.aminmax(finite)
        moments = [float(mean), float(std), float(low), float(high)]
    else:
        moments = [math.nan] * 4
    return TensorStats(x.numel(), *moments, int(counts[0]), int(counts[1]), nan, inf, int(counts[2]))


def first_values(t: Tensor, n: int) -> tuple[float, ...] | None:
    """The first n values of token 0: row 0 once every leading dim is flattened."""
    if n <= 0 or t.is_meta or t.numel() == 0:
        return None
    rows = t.detach().reshape(-1, t.shape[-1]) if t.dim() else t.detach().reshape(1, 1)
    return tuple(float(v) for v in rows[0, :n].double().tolist())


# --- the recording ------------------------------------------------------------------------


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

    @property
    def flops(self) -> int:
        return self.matmul_flops + self.elementwise_flops

    @property
    def name(self) -> str:
        return self.op.rsplit(".", 1)[-1]


@dataclass
class _Op:
    """An op plus what grouping needs and users do not: order, owner call, dataflow."""

    record: OpRecord
    seq: int
    call: int
    sources: list[tuple[Producer, Shape]]
    stats: TensorStats | None
    values: tuple[float, ...] | None


@dataclass
class _Call:
    """One module call: its op range [first_op, end_op) includes its children's ops."""

    index: int
    path: str
    module: nn.Module
    parent: int | None
    seq: int
    first_op: int
    sources: list[tuple[Producer, Shape]]
    end_op: int = -1
    output_shape: Shape = ()
    dtype: str = ""
    stats: TensorStats | None = None
    values: tuple[float, ...] | None = None
    dropout_changed: int | None = None
    dropout_zeroed: int | None = None


@dataclass
class Recording:
    """Everything a recorded forward did, in order, with no tensors kept."""

    ops: list[_Op] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    param_shapes: dict[str, Shape] = field(default_factory=dict)
    input_shape: Shape = ()
    input_stats: TensorStats | None = None
    input_values: tuple[float, ...] | None = None
    output_producer: Producer | None = None
    saved_bytes: int = 0


def _storage_id(t: Tensor) -> int:
    return int(t.untyped_storage()._cdata)


def _key(t: Tensor) -> tuple[Any, ...]:
    """Identity of a tensor's data: storage, offset, geometry (robust to autograd's wrappers)."""
    return (_storage_id(t), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


def _dtype_name(t: Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def elementwise_flops(name: str, kwargs: dict[str, Any], inputs: list[Tensor], outputs: list[Tensor]) -> int:
    """Non-matmul FLOPs of one op by our per-element convention (see module docstring)."""
    base = name.removesuffix("_")  # in-place forms (div_, mul_) count as their functional ones
    out_numel = outputs[0].numel() if outputs else 0
    if base == "gelu":
        act = "gelu_tanh" if kwargs.get("approximate") == "tanh" else "gelu"
        return ACTIVATIONS[act].flops_per_element * out_numel
    if base in ("addmm", "baddbmm"):
        return out_numel  # the bias add; 2·m·n·k is the matmul part
    if base in REDUCTION_OPS:
        return inputs[0].numel() if inputs else 0
    if base == "index_add":
        return inputs[-1].numel() if inputs else 0  # one add per source element
    return ELEMENTWISE_FLOPS.get(base, 0) * out_numel


class Recorder(TorchDispatchMode):
    """Records every aten op of `root`'s forward with its module path, shapes, FLOPs and stats."""

    def __init__(self, root: nn.Module, *, stats: bool = True, values: int = 0) -> None:
        super().__init__()
        self.root = root
        self.rec = Recording()
        self.want_stats = stats
        self.values = values
        self._stack: list[int] = []
        self._seq = 0
        self._paused = False
        self._producers: dict[tuple[Any, ...], Producer] = {}
        self._stats_by_key: dict[tuple[Any, ...], TensorStats | None] = {}
        self._keep: list[Tensor] = []  # alive until the end, so no storage id is reused mid-trace
        self._params: dict[int, str] = {}
        self._saved: dict[int, int] = {}
        for name, t in [*root.named_parameters(), *root.named_buffers()]:
            self._params[_storage_id(t)] = name
            self.rec.param_shapes[name] = tuple(t.shape)

    # dispatch ---------------------------------------------------------------------------

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if self._paused:
            return func(*args, **kwargs)
        # As FlopCounterMode: ops without a FLOP formula that can decompose are seen as their parts.
        if func not in flop_registry and func is not torch.ops.prim.device.default:
            with self:
                decomposed = func.decompose(*args, **kwargs)
            if decomposed is not NotImplemented:
                return decomposed
        out = func(*args, **kwargs)
        packet = func._overloadpacket
        if packet.__name__ not in SKIPPED_OPS:
            self._paused = True
            try:
                self._record_op(packet, args, kwargs, out)
            finally:
                self._paused = False
        return out

    def _source(self, t: Tensor) -> tuple[Producer, Shape] | None:
        """Who produced t; None for parameters, buffers and tensors made outside the forward."""
        key = _key(t)
        return (self._producers[key], tuple(t.shape)) if key in self._producers else None

    def _record_op(self, packet: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, Tensor)]
        outputs = [t for t in tree_leaves(out) if isinstance(t, Tensor)]
        if not outputs:
            return
        name = packet.__name__
        matmul = int(flop_registry[packet](*args, **kwargs, out_val=out)) if packet in flop_registry else 0
        params = tuple(dict.fromkeys(self._params[s] for s in map(_storage_id, inputs) if s in self._params))
        sources = [s for s in map(self._source, inputs) if s is not None]
        index = len(self.rec.ops)
        # Views of weights (aten.t of W) are weights, not activations: no statistics for them.
        is_weight = _storage_id(outputs[0]) in self._params
        meaningful = not is_weight and name not in UNINITIALISED_OPS
        stats = tensor_stats(outputs[0]) if self.want_stats and meaningful else None
        record = OpRecord(
            index,
            self._path(),
            f"aten.{name}",
            tuple(tuple(t.shape) for t in inputs),
            tuple(tuple(t.shape) for t in outputs),
            _dtype_name(outputs[0]),
            matmul,
            elementwise_flops(name, kwargs, inputs, outputs),
            params,
        )
        values = first_values(outputs[0], self.values) if meaningful else None
        owner = self._stack[-1] if self._stack else -1
        self.rec.ops.append(_Op(record, self._next_seq(), owner, sources, stats, values))
        for i, t in enumerate(outputs):
            self._producers[_key(t)] = ("op", index)
            if i == 0:
                self._stats_by_key[_key(t)] = stats
        self._keep.extend(outputs)

    # module calls -------------------------------------------------------------------------

    def _path(self) -> str:
        return self.rec.calls[self._stack[-1]].path if self._stack else ""

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def enter(self, path: str, module: nn.Module, args: tuple[Any, ...]) -> None:
        self._paused = True
        try:
            inputs = [t for t in tree_leaves(args) if isinstance(t, Tensor)]
            sources = [s for s in map(self._source, inputs) if s is not None]
            parent = self._stack[-1] if self._stack else None
            call = _Call(len(self.rec.calls), path, module, parent, self._next_seq(), len(self.rec.ops), sources)
            self.rec.calls.append(call)
            self._stack.append(call.index)
        finally:
            self._paused = False

    def exit(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        self._paused = True
        try:
            call = self.rec.calls[self._stack.pop()]
            call.end_op = len(self.rec.ops)
            if isinstance(output, Tensor):
                key = _key(output)
                call.output_shape, call.dtype = tuple(output.shape), _dtype_name(output)
                if self.want_stats:
                    call.stats = self._stats_by_key[key] if key in self._stats_by_key else tensor_stats(output)
                call.values = first_values(output, self.values)
                if isinstance(module, nn.Dropout) and self.want_stats and args and isinstance(args[0], Tensor):
                    before = args[0].detach()
                    call.dropout_changed = int((output != before).sum())
                    call.dropout_zeroed = int(((output == 0) & (before != 0)).sum())
                self._producers[key] = ("call", call.index)
                self._stats_by_key[key] = call.stats
                self._keep.append(output)
        finally:
            self._paused = False

    # autograd's saved tensors: what the backward pass would keep -----------------------------

    def pack(self, t: Tensor) -> Tensor:
        storage = _storage_id(t)
        if storage not in self._params:
            self._saved[storage] = t.untyped_storage().nbytes()
        return t

    # the run --------------------------------------------------------------------------------

    def run(self, x: Tensor) -> Tensor:
        self.rec.input_shape = tuple(x.shape)
        self._producers[_key(x)] = ("input", 0)
        if self.want_stats:
            self.rec.input_stats = tensor_stats(x)
        self.rec.input_values = first_values(x, self.values)
        handles = []
        for path, module in self.root.named_modules():
            handles.append(module.register_forward_pre_hook(_pre_hook(self, path)))
            handles.append(module.register_forward_hook(self.exit))
        try:
            with torch.autograd.graph.saved_tensors_hooks(self.pack, _unpack), self:
                out = self.root(x)
        finally:
            for handle in handles:
                handle.remove()
            self._stack.clear()
        self.rec.output_producer = self._producers.get(_key(out))
        self.rec.saved_bytes = sum(self._saved.values())
        self._keep.clear()
        return out


def _pre_hook(recorder: Recorder, path: str) -> Callable[[nn.Module, tuple[Any, ...]], None]:
    def hook(module: nn.Module, args: tuple[Any, ...]) -> None:
        recorder.enter(path, module, args)

    return hook


def _unpack(t: Tensor) -> Tensor:
    return t


def record(module: nn.Module, x: Tensor, *, stats: bool = True, values: int = 0) -> tuple[Tensor, Recording]:
    """Run module(x) under a Recorder (with autograd on, to see what it saves for backward)."""
    recorder = Recorder(module, stats=stats and not x.is_meta, values=values)
    with torch.enable_grad():
        out = recorder.run(x)
    return out, recorder.rec


# --- grouping ops into steps ----------------------------------------------------------------


@dataclass(frozen=True)
class ParamInfo:
    name: str
    shape: Shape

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
    note: str = ""
    dropout_changed: int | None = None
    dropout_zeroed: int | None = None
    tokens_per_expert: tuple[int, ...] | None = None
    substeps: tuple[TraceStep, ...] = ()

    @property
    def flops(self) -> int:
        return self.matmul_flops + self.elementwise_flops

    @property
    def param_count(self) -> int:
        return sum(p.count for p in self.params)


@dataclass
class _Group:
    """A step before its numbers are filled in: its own ops and its top-level calls."""

    name: str
    formula: str
    ops: list[int] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    substeps: list[_Group] = field(default_factory=list)
    note: str = ""
    tokens_per_expert: tuple[int, ...] | None = None


class _Grouper:
    """Walks the call tree and names the steps of each known module family."""

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        self._children: dict[int, list[int]] = {}
        self._own: dict[int, list[int]] = {}
        for c in rec.calls:
            if c.parent is not None:
                self._children.setdefault(c.parent, []).append(c.index)
        for op in rec.ops:
            self._own.setdefault(op.call, []).append(op.record.index)

    def segments(self, call: int) -> list[tuple[str, int]]:
        """Direct children calls and own ops of `call`, in execution order."""
        items = [(self.rec.ops[i].seq, "op", i) for i in self._own.get(call, [])]
        items += [(self.rec.calls[c].seq, "call", c) for c in self._children.get(call, [])]
        return [(kind, i) for _, kind, i in sorted(items)]

    def leaf(self, call: int) -> str:
        c = self.rec.calls[call]
        parent = self.rec.calls[c.parent].path if c.parent is not None else ""
        return c.path[len(parent) + 1 :] if parent else c.path

    def op_name(self, i: int) -> str:
        return self.rec.ops[i].record.name

    def group(self, call: int, prefix: str) -> list[_Group]:
        module = self.rec.calls[call].module
        if isinstance(module, TransformerBlock):
            return self._block(call, prefix)
        if isinstance(module, SelfAttention):
            return self._attention(call, prefix, module)
        if isinstance(module, (MoEFFN, SoftMoEFFN)):
            return self._moe(call, prefix, module)
        if isinstance(module, GatedFFN):
            return self._gated(call, prefix, module)
        if isinstance(module, DenseFFN):
            return self._dense(call, prefix, module)
        return [_Group(prefix + "forward", type(module).__name__, calls=[call])]

    # FFNs -----------------------------------------------------------------------------------

    def _call_group(self, call: int, prefix: str, formula: str) -> _Group:
        return _Group(prefix + self.leaf(call), formula, calls=[call])

    def _dense(self, call: int, prefix: str, module: DenseFFN) -> list[_Group]:
        spec, groups = module.spec, []
        act = ACTIVATIONS[spec.ffn_variant.activation]
        b = bool(spec.bias)
        for kind, i in self.segments(call):
            if kind == "call":
                leaf = self.leaf(i)
                formula = {
                    "up_proj": "x·W_upᵀ" + (" + b_up" if b else ""),
                    "down_proj": "h·W_downᵀ" + (" + b_down" if b else ""),
                    "dropout": f"dropout(h), p = {spec.dropout:g}",
                }.get(leaf, leaf)
                groups.append(self._call_group(i, prefix, formula))
            elif any(p.rsplit(".", 1)[-1] == "hidden_mask" for p in self.rec.ops[i].record.params):
                _add_op(groups, prefix + "mask", "m ⊙ h, fixed mask", i)
            else:
                _add_op(groups, prefix + "activation", f"{act.name}(h) = {act.formula.replace('z', 'h')}", i)
        return groups

    def _gated(self, call: int, prefix: str, module: GatedFFN) -> list[_Group]:
        spec, groups = module.spec, []
        act = ACTIVATIONS[spec.ffn_variant.activation]
        b = " + b" if spec.bias else ""
        own = [i for kind, i in self.segments(call) if kind == "op"]
        multiply = max((i for i in own if self.op_name(i) == "mul"), default=None)
        for kind, i in self.segments(call):
            if kind == "call":
                leaf = self.leaf(i)
                formula = {
                    "gate_proj": f"x·W_gateᵀ{b}",
                    "up_proj": f"x·W_upᵀ{b}",
                    "gate_up_proj": f"x·W_gate_upᵀ{b}",
                    "down_proj": f"h·W_downᵀ{b}",
                    "dropout": f"dropout(h), p = {spec.dropout:g}",
                }.get(leaf, leaf)
                groups.append(self._call_group(i, prefix, formula))
            elif self.op_name(i) in SPLIT_OPS:
                _add_op(groups, prefix + "split", "chunk into gate g, up u", i)
            elif i == multiply:
                gate = "g" if act.name == "identity" else f"{act.name}(g)"
                _add_op(groups, prefix + "multiply", f"h = {gate} ⊙ u", i)
            else:
                _add_op(groups, prefix + "activation", f"{act.name}(g) = {act.formula.replace('z', 'g')}", i)
        return groups

    def _moe(self, call: int, prefix: str, module: MoEFFN | SoftMoEFFN) -> list[_Group]:
        spec, routed = module.spec, isinstance(module, MoEFFN)
        expert = spec.ffn_variant
        k = spec.top_k if routed else spec.experts
        formulas = {
            "flatten": "tokens: (B, T, d) → (B·T, d)",
            "router": "x·W_routerᵀ",
            "softmax": "g = softmax over E experts, float32",
            "top_k": f"top-{k} of E by g",
            "renormalise": "ĝ = g / Σ_top-k g",
            "dispatch": "gather each expert's tokens",
            "combine": "Σ_k ĝ_k·expert_k(x)" if routed else "Σ_E g_e·expert_e(x)",
            "shared_experts": expert.formula,
            "shared_add": "routed + shared",
            "shared_expert_gate": "σ(x·w_g)·shared + routed",
            "unflatten": "(B·T, d) → (B, T, d)",
        }
        by_name: dict[str, _Group] = {}
        experts: list[_Group] = []
        segments = self.segments(call)
        last_op = max((n for n, (kind, _) in enumerate(segments) if kind == "op"), default=-1)
        phase = "flatten"
        for n, (kind, i) in enumerate(segments):
            if kind == "call":
                leaf = self.leaf(i)
                if leaf.startswith("experts."):
                    experts.append(_Group(prefix + leaf, expert.formula, calls=[i], substeps=self.group(i, prefix + leaf + ".")))
                    phase = "combine"
                    continue
                phase = {"router": "softmax", "shared_experts": "shared_add", "shared_expert_gate": "shared_expert_gate"}.get(leaf, phase)
                name = "shared_expert_gate" if leaf == "shared_expert_gate" else leaf
                by_name.setdefault(name, _Group(prefix + name, formulas.get(name, leaf))).calls.append(i)
                continue
            op = self.op_name(i)
            if phase == "flatten":
                step = "flatten"
            elif n == last_op and op in LAYOUT_OPS:
                step = "unflatten"
            elif op == "topk":
                step, phase = "top_k", "after_top_k"
            elif op == "zeros_like":
                step, phase = "combine", ("dispatch" if routed else "combine")
            elif phase == "after_top_k":
                step = "renormalise" if spec.normalize_top_k else "top_k"
            elif phase == "combine":
                step = "combine"
                if routed and op == "index_add":
                    phase = "dispatch"
            else:
                step = phase
            by_name.setdefault(step, _Group(prefix + step, formulas.get(step, step))).ops.append(i)
        if "dispatch" in by_name:
            tokens = tuple(self.rec.calls[g.calls[0]].sources[0][1][0] if self.rec.calls[g.calls[0]].sources else 0 for g in experts)
            by_name["dispatch"].tokens_per_expert = tokens
            by_name["dispatch"].note = _dispatch_note(module, tokens)
        head = ["flatten", "router", "softmax", "top_k", "renormalise", "dispatch"]
        tail = ["combine", "shared_experts", "shared_expert_gate", "shared_add", "unflatten"]
        return [by_name[s] for s in head if s in by_name] + experts + [by_name[s] for s in tail if s in by_name]

    # the block --------------------------------------------------------------------------------

    def _block(self, call: int, prefix: str) -> list[_Group]:
        block: TransformerBlock = self.rec.calls[call].module  # type: ignore[assignment]
        norm = "LayerNorm: (x − μ)/σ·γ + β" if block.spec.norm == "layernorm" else "RMSNorm: x/rms(x)·γ"
        groups: list[_Group] = []
        last_child = "attn"
        for kind, i in self.segments(call):
            if kind == "op":
                _add_op(groups, f"{prefix}{last_child}_residual", f"x + {last_child}(·)", i)
                continue
            leaf = self.leaf(i)
            last_child = leaf if leaf in ("attn", "ffn") else last_child
            if leaf in ("attn", "ffn"):
                groups += self.group(i, prefix + leaf + ".")
            else:
                groups.append(self._call_group(i, prefix, norm))
        return groups

    def _attention(self, call: int, prefix: str, module: SelfAttention) -> list[_Group]:
        h, kv, dh = module.n_heads, module.n_kv_heads, module.head_dim
        gqa = f"; K, V repeated {h // kv}× (GQA)" if kv < h else ""
        heads = f"split into heads: (B, T, H·d_h) → (B·H, T, d_h), H={h}, d_h={dh}{gqa}"
        formulas = {
            "heads": heads,
            "scores": "S = Q·Kᵀ/√d_h",
            "softmax": "P = softmax(S) over keys",
            "context": "P·V",
            "merge": "concat heads: (B·H, T, d_h) → (B, T, H·d_h)",
        }
        proj = {"q_proj": "x·W_Qᵀ", "k_proj": "x·W_Kᵀ", "v_proj": "x·W_Vᵀ", "o_proj": "·W_Oᵀ"}
        groups: list[_Group] = []
        bmm_seen = 0
        phase = "heads"
        for kind, i in self.segments(call):
            if kind == "call":
                leaf = self.leaf(i)
                bias = " + b" if getattr(module, leaf).bias is not None else ""
                groups.append(self._call_group(i, prefix, proj.get(leaf, leaf) + bias))
                continue
            op = self.op_name(i)
            if op == "bmm":
                bmm_seen += 1
                phase = "scores" if bmm_seen == 1 else "context"
            elif op == "_softmax":
                phase = "softmax"
            elif phase == "context" and op in LAYOUT_OPS:
                phase = "merge"
            _add_op(groups, prefix + phase, formulas[phase], i)
        return groups


def _add_op(groups: list[_Group], name: str, formula: str, op: int) -> None:
    """Append op to the last group if it has this name, else open a new group."""
    if groups and groups[-1].name == name and not groups[-1].calls:
        groups[-1].ops.append(op)
    else:
        groups.append(_Group(name, formula, ops=[op]))


def _dispatch_note(module: nn.Module, tokens: tuple[int, ...]) -> str:
    note = "tokens per expert: " + ", ".join(str(t) for t in tokens)
    stats = getattr(module, "last_dispatch", None)
    if stats is not None and stats.dropped:
        note += f"; {stats.dropped} dropped over capacity {stats.capacity}"
    if stats is not None and stats.assumed_balanced:
        note += " (meta: balanced routing assumed)"
    return note


class _StepBuilder:
    """Turns groups into TraceSteps: FLOPs, parameters, dataflow, statistics and flags."""

    def __init__(self, rec: Recording, groups: list[_Group]) -> None:
        self.rec = rec
        self.groups = groups
        self.op_step: dict[int, str] = {}
        self.call_step: dict[int, str] = {}
        for g in groups:
            self._claim(g, g.name)

    def _claim(self, g: _Group, name: str) -> None:
        for i in g.ops:
            self.op_step[i] = name
        for c in g.calls:
            call = self.rec.calls[c]
            for i in range(call.first_op, call.end_op):
                self.op_step[i] = name
            for d in self.rec.calls[c:]:
                if d.index == c or self._descends(d.index, c):
                    self.call_step[d.index] = name

    def _descends(self, call: int, ancestor: int) -> bool:
        parent = self.rec.calls[call].parent
        while parent is not None:
            if parent == ancestor:
                return True
            parent = self.rec.calls[parent].parent
        return False

    def producer_step(self, producer: Producer) -> str | None:
        kind, i = producer
        if kind == "input":
            return "input"
        if kind == "op":
            return self.op_step.get(i)
        if kind == "call":
            if i in self.call_step:
                return self.call_step[i]
            call = self.rec.calls[i]  # a container (the FFN inside a block): its last op's step
            return self.op_step.get(call.end_op - 1) if call.end_op > call.first_op else None
        return None

    def build(self, fallback: _StepBuilder | None = None) -> list[TraceStep]:
        steps = [self._step(g, fallback) for g in self.groups]
        consumed: dict[str, list[Shape]] = {}
        for s, g in zip(steps, self.groups, strict=True):
            for producer, shape in self._sources(g):
                name = self.producer_step(producer)
                if name and name != s.name:
                    consumed.setdefault(name, []).append(shape)
        return [replace(s, output_shapes=tuple(dict.fromkeys(consumed.get(s.name, [s.output_shape])))) for s in steps]

    def _sources(self, g: _Group) -> list[tuple[Producer, Shape]]:
        out = [s for i in g.ops for s in self.rec.ops[i].sources]
        out += [s for c in g.calls for s in self.rec.calls[c].sources]
        return out

    def _ops_of(self, g: _Group) -> list[int]:
        ops = list(g.ops)
        for c in g.calls:
            call = self.rec.calls[c]
            ops += range(call.first_op, call.end_op)
        return sorted(ops)

    def _step(self, g: _Group, fallback: _StepBuilder | None) -> TraceStep:
        ops = [self.rec.ops[i] for i in self._ops_of(g)]
        inputs: dict[tuple[str, Shape], None] = {}
        for producer, shape in self._sources(g):
            name = self.producer_step(producer) or (fallback.producer_step(producer) if fallback else None) or "input"
            if name != g.name:
                inputs[(name, shape)] = None
        params = tuple(dict.fromkeys(p for op in ops for p in op.record.params))
        main = self._main(g)
        substeps = tuple(_StepBuilder(self.rec, g.substeps).build(fallback=self)) if g.substeps else ()
        input_stats = self._input_stats(g)
        step = TraceStep(
            name=g.name,
            op=g.formula,
            input_shapes=tuple(shape for _, shape in inputs),
            output_shape=main[0],
            output_shapes=(),
            inputs_from=tuple(dict.fromkeys(name for name, _ in inputs)),
            params=tuple(ParamInfo(p, self.rec.param_shapes[p]) for p in params),
            matmul_flops=sum(op.record.matmul_flops for op in ops),
            elementwise_flops=sum(op.record.elementwise_flops for op in ops),
            aten_ops=tuple(op.record.op for op in ops),
            op_indices=tuple(op.record.index for op in ops),
            dtype=main[1],
            stats=main[2],
            input_stats=input_stats,
            values=main[3],
            tokens_per_expert=g.tokens_per_expert,
            substeps=substeps,
        )
        changed, zeroed, note = self._dropout(g, step.stats)
        step = replace(step, dropout_changed=changed, dropout_zeroed=zeroed)
        return replace(step, flags=_flags(step, ops), note=g.note or note or _note(step))

    def _main(self, g: _Group) -> tuple[Shape, str, TensorStats | None, tuple[float, ...] | None]:
        """The step's output: its last call's, or its last own op's, whichever ran last."""
        last_call = self.rec.calls[g.calls[-1]] if g.calls else None
        last_op = self.rec.ops[g.ops[-1]] if g.ops else None
        if last_call is not None and (last_op is None or last_call.seq > last_op.seq):
            return last_call.output_shape, last_call.dtype, last_call.stats, last_call.values
        assert last_op is not None
        return last_op.record.output_shapes[0], last_op.record.dtype, last_op.stats, last_op.values

    def _input_stats(self, g: _Group) -> TensorStats | None:
        for producer, _ in self._sources(g):
            kind, i = producer
            if kind == "op" and self.op_step.get(i) != g.name:
                return self.rec.ops[i].stats
            if kind == "call" and self.call_step.get(i) != g.name:
                return self.rec.calls[i].stats
            if kind == "input":
                return self.rec.input_stats
        return None

    def _dropout(self, g: _Group, stats: TensorStats | None) -> tuple[int | None, int | None, str]:
        """What a dropout call changed, and the note that says so (real devices only)."""
        for c in g.calls:
            call, module = self.rec.calls[c], self.rec.calls[c].module
            if not isinstance(module, nn.Dropout) or call.dropout_changed is None or stats is None:
                continue
            if not module.training:
                note = "unchanged (dropout is off in eval mode)"
            elif call.dropout_changed == 0:
                note = f"unchanged (p = {module.p:g})"
            else:
                note = f"changed {call.dropout_changed:,} of {stats.numel:,}: {call.dropout_zeroed:,} zeroed, the rest scaled by 1/(1−p)"
            return call.dropout_changed, call.dropout_zeroed, note
        return None, None, ""


def _flags(step: TraceStep, ops: list[_Op]) -> tuple[str, ...]:
    """NaN / Inf anywhere in the step; overflow and underflow for float16 / bfloat16."""
    # Layout ops (views of an input) would repeat the previous step's values: skip them.
    stats = [op.stats for op in ops if op.stats is not None and op.record.name not in LAYOUT_OPS]
    stats += [step.stats] if step.stats else []
    flags = []
    low = step.dtype in ("float16", "bfloat16")
    if any(s.inf for s in stats):
        came_in = step.input_stats is not None and step.input_stats.inf > 0
        flags.append("overflow" if low and not came_in else "Inf")
    if any(s.nan for s in stats):
        flags.append("NaN")
    subnormal = max((s.subnormal for s in stats), default=0)
    if low and subnormal:
        flags.append(f"underflow ({subnormal} subnormal)")
    return tuple(flags)


def _note(step: TraceStep) -> str:
    if step.name.rsplit(".", 1)[-1] == "activation" and step.stats and step.input_stats:
        return f"negatives {step.input_stats.negatives:,} → {step.stats.negatives:,}"
    return ""


def group_steps(rec: Recording) -> list[TraceStep]:
    """The logical steps of a recorded forward of an FFN or block built by this package
    (any other module is one step)."""
    root = next((c.index for c in rec.calls if c.parent is None), None)
    if root is None:
        return []
    groups = _Grouper(rec).group(root, "")
    return _StepBuilder(rec, groups).build()


# --- the whole trace ------------------------------------------------------------------------


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
class TraceResult:
    """One traced forward: the run's settings, its steps and raw ops, and the totals."""

    spec: FFNSpec
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
    activation_bytes_estimate: int  # accounting's per-token estimate × tokens × dtype bytes
    check: CheckResult | None = None

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    @property
    def total_params(self) -> int:
        return sum(n for _, n in self.param_groups)

    @property
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
        return sum(s.flops for s in self.steps if s.name.startswith(part + "."))


def _check_options(
    spec: FFNSpec, block: BlockSpec | None, *, batch: int, seq_len: int, mode: str, values: int, check: bool, device: str
) -> None:
    check_int("batch", batch)
    check_int("seq_len", seq_len)
    if mode not in MODES:
        raise FFNError("mode", mode, "choose one of " + ", ".join(MODES))
    check_int("values", values, minimum=0, maximum=MAX_VALUES)
    if check and device.strip().lower() == "meta":
        raise FFNError("check", True, "needs values; use --device cpu or cuda (meta tensors hold none)")
    if block is not None and block.ffn != spec:
        raise FFNError("block", "BlockSpec", "must wrap the spec being traced (BlockSpec.around(spec))")
    if check and mode == "train" and spec.dropout > 0:
        raise FFNError("mode", mode, "--check compares with a deterministic reference: use --mode eval or --dropout 0")


def estimate_bytes(spec: FFNSpec, *, batch: int, seq_len: int, dtype: str, block: BlockSpec | None = None, check: bool = False) -> int:
    """Peak bytes a trace allocates: weights, plus activations ×3 (autograd keeps them, the
    recorder keeps every intermediate alive, statistics make float32 copies)."""
    width = DTYPE_BYTES[dtype]
    tokens = batch * seq_len
    params = total_params(spec)
    elements = tokens * (activation_elements_per_token(spec) + 2 * spec.d_model)
    if block is not None:
        a = block.attention
        params += a.params + 4 * spec.d_model
        elements += tokens * (2 * a.q_dim + 2 * a.kv_dim + 4 * spec.d_model) + 2 * batch * int(a.n_heads or 1) * seq_len * seq_len
    needed = params * width + 3 * elements * max(width, 4)
    if check:
        needed += 8 * (total_params(spec) + 2 * elements)
    return needed


def _make_input(shape: Shape, device: torch.device, dtype: torch.dtype, seed: int) -> Tensor:
    if device.type == "meta":
        return torch.empty(shape, device=device, dtype=dtype)
    generator = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)


def _param_groups(module: nn.Module) -> tuple[tuple[str, int], ...]:
    groups: dict[str, int] = {}
    for name, p in module.named_parameters():
        top = name.split(".", 1)[0]
        groups[top] = groups.get(top, 0) + p.numel()
    return tuple(groups.items())


def _to_numpy(t: Tensor) -> np.ndarray:
    return t.detach().to(device="cpu", dtype=torch.float64).numpy()


def _check(spec: FFNSpec, module: nn.Module, x: Tensor, out: Tensor, dtype: str) -> CheckResult:
    """Reference on the FFN's own weights and input; inside a block, the FFN's input there."""
    ffn = module.ffn if isinstance(module, TransformerBlock) else module
    if isinstance(module, TransformerBlock):
        captured: dict[str, Tensor] = {}

        def keep(_m: nn.Module, args: tuple[Any, ...], output: Tensor) -> None:
            captured["x"], captured["y"] = args[0].detach(), output.detach()

        handle = ffn.register_forward_hook(keep)
        try:
            with torch.no_grad():
                module(x)
        finally:
            handle.remove()
        x, out = captured["x"], captured["y"]
    weights = {name: _to_numpy(t) for name, t in ffn.state_dict().items()}
    ref = reference_forward(spec, weights, _to_numpy(x))
    err = np.abs(_to_numpy(out) - ref).max()
    scale = max(float(np.abs(ref).max()), np.finfo(np.float64).tiny)
    return CheckResult(float(err / scale), CHECK_THRESHOLDS[dtype], dtype)


def trace(
    spec: FFNSpec,
    *,
    batch: int = 2,
    seq_len: int = 5,
    device: str = "cpu",
    dtype: str = "float32",
    seed: int = 0,
    mode: str = "eval",
    values: int = 0,
    check: bool = False,
    block: BlockSpec | None = None,
) -> TraceResult:
    """Build the FFN (or its block), run it once on a random (batch, seq_len, d_model) input
    under the Recorder, and return its steps. Refuses, before allocating, what will not fit."""
    _check_options(spec, block, batch=batch, seq_len=seq_len, mode=mode, values=values, check=check, device=device)
    dev, dt = resolve_device_dtype(device, dtype)
    dtype_name = str(dt).removeprefix("torch.")
    if dev.type != "meta":
        need = estimate_bytes(spec, batch=batch, seq_len=seq_len, dtype=dtype_name, block=block, check=check)
        preflight(need, dev, "this trace")
    module: nn.Module = build_block(block, device=dev, dtype=dt, seed=seed) if block else build_ffn(spec, device=dev, dtype=dt, seed=seed)
    module.train(mode == "train")
    x = _make_input((batch, seq_len, spec.d_model), dev, dt, seed)
    torch.manual_seed(seed)  # dropout masks in train mode
    out, rec = record(module, x, values=values)
    steps = tuple(group_steps(rec))
    result = TraceResult(
        spec=spec,
        block=block,
        batch=batch,
        seq_len=seq_len,
        device=str(dev),
        dtype=dtype_name,
        mode=mode,
        seed=seed,
        input_shape=tuple(x.shape),
        output_shape=tuple(out.shape),
        input_stats=rec.input_stats,
        input_values=rec.input_values,
        steps=steps,
        ops=tuple(op.record for op in rec.ops),
        param_groups=_param_groups(module),
        saved_bytes=rec.saved_bytes,
        activation_bytes_estimate=activation_elements_per_token(spec) * batch * seq_len * DTYPE_BYTES[dtype_name],
    )
    if check:
        result = replace(result, check=_check(spec, module, x, out, dtype_name))
    return result


def check_failure(result: TraceResult) -> FFNRuntimeError | None:
    """The one-line error for a failed --check, or None."""
    c = result.check
    if c is None or c.passed:
        return None
    return FFNRuntimeError(
        f"--check failed: max relative error {c.max_rel_error:.3g} exceeds {c.threshold:g} for {c.dtype} "
        "(torch vs the NumPy float64 reference)"
    )
