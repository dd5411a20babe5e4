"""Record a backward pass under the same recorder as its forward, and tie each backward op to
the forward step whose graph node it ran in.

While the forward runs, a TorchFunctionMode stamps every autograd node a call creates with the
forward ops recorded during that call (a custom autograd.Function's node, whose `apply` no mode
sees, with the ops its forward ran). Every tensor autograd saves passes through the recorder's
saved-tensor hooks (`torch.autograd.graph.saved_tensors_hooks`, public, custom Functions
included): packing notes which forward step produced it, unpacking (during the backward) notes
which node read it. During the backward, each op the recorder sees runs inside one node (the
one whose pre-hook ran last and whose hook has not yet, on that thread: public `Node` hooks),
whose stamp says which forward step it belongs to; ops that run with grad mode on are a
checkpoint's recomputation (the engine turns it off).

The subclass reads a few of the recorder's internals (its producers, parameters and kept
tensors): it records the same ops, on into the backward.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.tracing.gradient_seed import gradient_seed
from ffn_cli.tracing.leaves import tensor_leaves
from ffn_cli.tracing.ops import LAYOUT_OPS
from ffn_cli.tracing.recorder import ModuleCall, Producer, RecordedOp, Recorder, Recording, dtype_name, tracking_modules
from ffn_cli.tracing.result import SavedRead, Shape, TensorStats, TraceStep
from ffn_cli.tracing.stats import tensor_stats
from ffn_cli.tracing.steps import group_steps
from ffn_cli.tracing.torch_names import storage_id
from ffn_cli.user_code import users_call, users_op

__all__ = ["BackwardRecording", "record_backward"]

STAMP = "ffn_forward_ops"  # node.metadata key: the forward ops of the call that made the node


@dataclass
class BackwardRecording:
    """The forward (as `record` returns it, with its steps) and what the backward did after it."""

    forward: Recording
    steps: list[TraceStep]
    ops: list[RecordedOp] = field(default_factory=list)  # record.index continues the forward's
    calls: list[ModuleCall] = field(default_factory=list)  # the forward's and the recomputation's
    stamps: dict[int, str] = field(default_factory=dict)  # backward op → forward step
    reads: dict[int, tuple[tuple[int, SavedRead], ...]] = field(default_factory=dict)  # op → (storage, read)
    recompute: set[int] = field(default_factory=set)
    writes: dict[int, tuple[int, ...]] = field(default_factory=dict)  # backward op → storages of its outputs
    made_by: dict[int, int] = field(default_factory=dict)  # storage → first backward op that wrote it
    param_grads: dict[str, tuple[tuple[int, ...], int | None, TensorStats | None]] = field(default_factory=dict)
    input_grad: tuple[int | None, TensorStats | None, Shape] = (None, None, ())  # storage of dL/dx, its stats, shape
    output_grad: TensorStats | None = None
    packed: dict[int, int] = field(default_factory=dict)  # storage → bytes, as the pack hook saw them


class _NodeStamper(TorchFunctionMode):
    """Stamps each autograd node a torch call creates with the forward ops recorded during it."""

    def __init__(self, recorder: _PassRecorder) -> None:
        super().__init__()
        self.recorder = recorder
        self.rec = recorder.rec

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        for t in tensor_leaves((args, kwargs)):
            self.recorder.stamp_function_node(t)
        first = len(self.rec.ops)
        out = users_op(func, args, kwargs or {})
        ops = tuple(range(first, len(self.rec.ops))) or ((first - 1,) if first else ())
        for t in tensor_leaves(out):
            if t.grad_fn is not None:
                _stamp(t.grad_fn, ops)
        return out


@dataclass(eq=False)
class _Packed:
    """A tensor autograd saved, as the pack hook kept it: the tensor, and (once the forward's
    steps are named) the read it is for the backward step that unpacks it."""

    tensor: Tensor
    key: tuple[Any, ...]
    read: SavedRead | None = None


def _stamp(root: Any, ops: tuple[int, ...]) -> None:
    """Stamp root and every node behind it not stamped yet (those the same call made)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node is None or STAMP in node.metadata:
            continue
        node.metadata[STAMP] = ops
        stack.extend(n for n, _ in node.next_functions)


def _graph(root: Any) -> list[Any]:
    seen: dict[int, Any] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(n for n, _ in node.next_functions)
    return list(seen.values())


class _RunningNodes:
    """Which autograd node the engine is running now, on this thread: a pre-hook on every node
    of the graph pushes it, its hook pops it. Nodes run one at a time on a device's thread."""

    def __init__(self, nodes: list[Any]) -> None:
        self._local = threading.local()
        self._handles = []
        self.started = False  # whether the engine has run one of the nodes yet
        for node in nodes:
            self._handles.append(node.register_prehook(lambda _grads, node=node: self._push(node)))
            self._handles.append(node.register_hook(lambda _inputs, _outputs: self._pop()))

    def _stack(self) -> list[Any]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def _push(self, node: Any) -> None:
        self.started = True
        self._stack().append(node)

    def _pop(self) -> None:
        stack = self._stack()
        if stack:
            stack.pop()

    @property
    def current(self) -> Any:
        stack = self._stack()
        return stack[-1] if stack else None

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


class _PassRecorder(Recorder):
    """The forward recorder, told when the backward starts; from then on every op it records is
    tied to the autograd node it ran in."""

    def __init__(self, root: nn.Module, *, stats: bool, values: int, functions: bool = False) -> None:
        super().__init__(root, stats=stats, values=values, keep_graph=True, functions=functions)
        self.backward_from: int | None = None
        self.running: _RunningNodes | None = None
        self.out = BackwardRecording(Recording(), [])
        self._step_of_op: dict[int, str] = {}
        self._packs: list[_Packed] = []
        self._node_of_op: dict[int, int] = {}  # backward op → id of the node it ran in
        self._node_reads: dict[int, list[_Packed]] = {}  # node id → what it unpacked, in order
        self.reading = False  # whether unpacking notes reads (not under checkpointing)

    def dispatch(self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.running is not None and not self.running.started:  # torch making the seed's one (gradient_seed.py)
            return users_op(func, args, kwargs)
        before = len(self.rec.ops)
        out = super().dispatch(func, types, args, kwargs)
        if self.backward_from is None or len(self.rec.ops) == before:
            return out
        node = self.running.current if self.running is not None else None
        stamp = node.metadata.get(STAMP, ()) if node is not None else ()
        step = next((self._step_of_op[i] for i in reversed(stamp) if i in self._step_of_op), "")
        # The engine runs nodes with grad mode off; a checkpoint turns it on to recompute its forward.
        recompute = torch.is_grad_enabled()
        storages = tuple(storage_id(t) for t in tensor_leaves(out))
        for i in range(before, len(self.rec.ops)):
            self.out.stamps[i] = step
            if node is not None:
                self._node_of_op[i] = id(node)
            self.out.writes[i] = storages
            if recompute:
                self.out.recompute.add(i)
        for storage in storages:
            self.out.made_by.setdefault(storage, before)
        if func.overloadpacket.__name__ == "copy_":  # AccumulateGrad's copy: the values' author is the source's
            source = storage_id(args[1])
            self.out.made_by[storage_id(args[0])] = self.out.made_by.get(source, before)
        return out

    def pack(self, t: Tensor) -> Any:
        if self.backward_from is not None:
            return super().pack(t)  # a checkpoint's recomputation: no read of ours
        storage = storage_id(t)
        if storage in self._params:
            return super().pack(t)  # a weight: read by its step, never listed as kept
        self.out.packed[storage] = t.untyped_storage().nbytes()
        packed = _Packed(t, self._key(t))
        self._packs.append(packed)
        super().pack(t)
        return packed

    def unpack(self, packed: Any) -> Any:
        if not isinstance(packed, _Packed):
            return super().unpack(packed)
        node = self.running.current if self.running is not None else None
        if self.reading and node is not None and packed.read is not None:
            reads = self._node_reads.setdefault(id(node), [])
            if not any(p is packed for p in reads):
                reads.append(packed)
        return packed.tensor

    def stamp_function_node(self, t: Tensor) -> None:
        """A custom autograd.Function's output, met as a later call's input: its node (which no
        call stamped, `apply` being invisible to modes) gets the op that computed the output."""
        node = t.grad_fn
        if not isinstance(node, torch.autograd.function.BackwardCFunction) or STAMP in node.metadata:
            return
        producer = self._producers.get(self._key(t))
        op = self._last_op(producer) if producer is not None else None
        if op is not None:
            _stamp(node, (op,))

    def _last_op(self, producer: Producer) -> int | None:
        kind, i = producer
        if kind == "op":
            return i
        if kind == "call" and self.rec.calls[i].end_op > self.rec.calls[i].first_op:
            return self.rec.calls[i].end_op - 1
        return None

    def name_saved(self, checkpointed: bool) -> None:
        """Step names for every forward op; each saved tensor named by its producer. Under
        checkpointing, unpacking a saved tensor recomputes it: none are read here (in a block,
        attention's neither), the backward steps list what they read recomputed."""
        for step in self.out.steps:
            for i in step.op_indices:
                self._step_of_op[i] = step.name
        by_serial: dict[int, str] = {}
        for key, (kind, i) in self._producers.items():
            by_serial.setdefault(key[0], self._producer_step((kind, i)))
        self.reading = not checkpointed
        for packed in self._packs:
            t = packed.tensor
            producer = self._producers.get(packed.key)
            if producer is None and t.dim() == 0:
                continue  # a Python number autograd wrapped (`0.5 * e`): kept as a scalar, no tensor
            name = self._producer_step(producer) if producer else by_serial.get(packed.key[0], "input")
            storage = t.untyped_storage().nbytes()
            part = t.numel() * t.element_size() < storage  # a chunk's half keeps the whole alive
            packed.read = SavedRead(name, tuple(t.shape), dtype_name(t.dtype), storage, part=part)

    def reads_of_ops(self) -> dict[int, tuple[tuple[int, SavedRead], ...]]:
        """Each backward op's reads: what the node it ran in unpacked."""
        out: dict[int, tuple[tuple[int, SavedRead], ...]] = {}
        for i, node in self._node_of_op.items():
            packs = self._node_reads.get(node, ())
            out[i] = tuple((storage_id(p.tensor), p.read) for p in packs if p.read is not None)
        return out

    def _producer_step(self, producer: Producer) -> str:
        """The forward step that computed a tensor's values: through views, and through module
        calls that ran no op of their own (dropout in eval mode hands its input on)."""
        for _step in range(len(self.rec.ops) + len(self.rec.calls)):
            kind, i = producer
            if kind == "op":
                op = self.rec.ops[i]
                if op.record.name not in LAYOUT_OPS or not op.sources:
                    return self._step_of_op.get(i, "input")
                producer = op.sources[0][0]
            elif kind == "call":
                call = self.rec.calls[i]
                if call.end_op > call.first_op:
                    return self._step_of_op.get(call.end_op - 1, "input")
                if not call.sources:
                    return "input"
                producer = call.sources[0][0]
            else:
                return "input"
        return "input"


def _join_sums(result: BackwardRecording) -> None:
    """The engine adds up the gradients of a tensor used twice between nodes, in none of them.
    Where every gradient it adds came from one forward step (x in both terms of fairseq's
    gelu), the sum is that step's own; where they came from two (the two projections that
    read x), it stays a step of its own."""
    for op in result.ops:
        i = op.record.index
        if result.stamps.get(i, ""):
            continue
        steps = {result.stamps.get(j, "") for (kind, j), _shape in op.sources if kind == "op"}
        if len(steps) == 1 and "" not in steps and len(op.sources) > 1:
            result.stamps[i] = steps.pop()


def _snapshot(rec: Recording) -> Recording:
    """The forward as recorded so far: its ops and calls, before the backward adds its own."""
    return replace(rec, ops=list(rec.ops), calls=list(rec.calls))


def record_backward(
    module: nn.Module,
    x: Tensor,
    make_grad: Callable[[Tensor], Tensor],
    *,
    stats: bool = True,
    values: int = 0,
    checkpointed: bool = False,
    functions: bool = False,
    depth: int = 1,
    call: Callable[[Tensor], Any] | None = None,
) -> tuple[Tensor, BackwardRecording]:
    """Run module(x) (or call(x), which runs it) and then backward from make_grad(output), both
    under one recorder; `functions` and `depth` as for `record` and `group_steps`."""
    recorder = _PassRecorder(module, stats=stats and not x.is_meta, values=values, functions=functions)
    x = x.detach().requires_grad_(True)  # dL/dx is what flows on to the layer below
    with torch.enable_grad(), _NodeStamper(recorder):
        out = recorder.run(x, call)
    recorder.stamp_function_node(out)
    result = recorder.out
    result.forward = _snapshot(recorder.rec)
    result.steps = group_steps(result.forward, depth)
    if out.grad_fn is None:  # an integer output (argmax, a count) or one cut from the graph
        why = (
            _("is {dtype}, which carries no gradient")
            if not out.is_floating_point()
            else _("does not depend on the input or any parameter")
        )
        raise FFNError(
            "backward",
            True,
            _("the module's output {why}: a backward needs a floating-point output computed from x").format(
                why=why.format(dtype=dtype_name(out.dtype))
            ),
        )
    recorder.name_saved(checkpointed)
    grad = make_grad(out.detach())
    result.output_grad = tensor_stats(grad) if recorder.want_stats else None
    recorder._producers = {}  # from here on, only gradients: dL/dy, then what backward ops make
    recorder._producers[recorder._key(grad)] = ("input", 0)
    recorder.backward_from = len(recorder.rec.ops)
    recorder.running = _RunningNodes(_graph(out.grad_fn))
    seed = gradient_seed(out, grad)
    try:
        with tracking_modules(recorder), recorder:  # recomputation calls the modules again
            users_call(seed.backward)
    finally:
        recorder.running.remove()
    result.ops = recorder.rec.ops[recorder.backward_from :]
    result.reads = recorder.reads_of_ops()
    _join_sums(result)
    result.calls = recorder.rec.calls
    for name, p in module.named_parameters():
        if p.grad is not None:
            result.param_grads[name] = (tuple(p.shape), storage_id(p.grad), tensor_stats(p.grad) if recorder.want_stats else None)
        else:
            result.param_grads[name] = (tuple(p.shape), None, None)
    if x.grad is not None:
        result.input_grad = (storage_id(x.grad), tensor_stats(x.grad) if recorder.want_stats else None, tuple(x.shape))
    recorder.close()
    return out, result
