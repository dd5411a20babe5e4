"""Record a backward pass under the same recorder as its forward, and tie each backward op to
the forward step whose graph node it ran in.

While the forward runs, a TorchFunctionMode stamps every autograd node a call creates with the
forward ops recorded during that call; after it, each node's saved tensors (its `_saved_*`
attributes, what the saved-tensor hooks packed) are named by the forward step that produced
them. During the backward, each op the recorder sees runs inside one node (the
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
from ffn_cli.trace.backward_result import SavedRead
from ffn_cli.trace.leaves import tensor_leaves
from ffn_cli.trace.ops import LAYOUT_OPS
from ffn_cli.trace.recorder import ModuleCall, Producer, RecordedOp, Recorder, Recording, dtype_name, tracking_modules
from ffn_cli.trace.result import Shape, TensorStats, TraceStep
from ffn_cli.trace.stats import tensor_stats
from ffn_cli.trace.steps import group_steps
from ffn_cli.trace.torch_names import saved_tensors, storage_id

__all__ = ["BackwardRecording", "record_backward"]

STAMP = "ffn_forward_ops"  # node.metadata key: the forward ops of the call that made the node
READS = "ffn_saved_reads"  # node.metadata key: the node's saved tensors, named


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

    def __init__(self, rec: Recording) -> None:
        super().__init__()
        self.rec = rec

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        first = len(self.rec.ops)
        out = func(*args, **(kwargs or {}))
        ops = tuple(range(first, len(self.rec.ops))) or ((first - 1,) if first else ())
        for t in tensor_leaves(out):
            if t.grad_fn is not None:
                _stamp(t.grad_fn, ops)
        return out


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
        for node in nodes:
            self._handles.append(node.register_prehook(lambda _grads, node=node: self._stack().append(node)))
            self._handles.append(node.register_hook(lambda _inputs, _outputs: self._pop()))

    def _stack(self) -> list[Any]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack  # type: ignore[no-any-return]

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

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        before = len(self.rec.ops)
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if self.backward_from is None or len(self.rec.ops) == before:
            return out
        node = self.running.current if self.running is not None else None
        stamp = node.metadata.get(STAMP, ()) if node is not None else ()
        step = next((self._step_of_op[i] for i in reversed(stamp) if i in self._step_of_op), "")
        reads = node.metadata.get(READS, ()) if node is not None else ()
        # The engine runs nodes with grad mode off; a checkpoint turns it on to recompute its forward.
        recompute = torch.is_grad_enabled()
        storages = tuple(storage_id(t) for t in tensor_leaves(out))
        for i in range(before, len(self.rec.ops)):
            self.out.stamps[i] = step
            self.out.reads[i] = reads
            self.out.writes[i] = storages
            if recompute:
                self.out.recompute.add(i)
        for storage in storages:
            self.out.made_by.setdefault(storage, before)
        if func.overloadpacket.__name__ == "copy_":  # AccumulateGrad's copy: the values' author is the source's
            source = storage_id(args[1])
            self.out.made_by[storage_id(args[0])] = self.out.made_by.get(source, before)
        return out

    def pack(self, t: Tensor) -> Tensor:
        if self.backward_from is None and storage_id(t) not in self._params:
            self.out.packed[storage_id(t)] = t.untyped_storage().nbytes()
        return super().pack(t)

    def name_saved(self, root: Any, checkpointed: bool) -> None:
        """Step names for every forward op; each node's saved tensors named by their producer.
        Under checkpointing, unpacking a saved tensor recomputes it: none are read here (in a
        block, attention's neither), the backward steps list what they read recomputed."""
        for step in self.out.steps:
            for i in step.op_indices:
                self._step_of_op[i] = step.name
        by_serial: dict[int, str] = {}
        for key, (kind, i) in self._producers.items():
            by_serial.setdefault(key[0], self._producer_step((kind, i)))
        if checkpointed:
            return
        for node in _graph(root):
            reads = []
            for t in saved_tensors(node):
                storage = storage_id(t)
                if storage in self._params:
                    continue
                producer = self._producers.get(self._key(t))
                if producer is None and t.dim() == 0:
                    continue  # a Python number autograd wrapped (`0.5 * e`): kept as a scalar, no tensor
                name = self._producer_step(producer) if producer else by_serial.get(self._key(t)[0], "input")
                reads.append((storage, SavedRead(name, tuple(t.shape), dtype_name(t.dtype), t.untyped_storage().nbytes())))
            node.metadata[READS] = tuple(reads)

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
    with torch.enable_grad(), _NodeStamper(recorder.rec):
        out = recorder.run(x, call)
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
    recorder.name_saved(out.grad_fn, checkpointed)
    grad = make_grad(out.detach())
    result.output_grad = tensor_stats(grad) if recorder.want_stats else None
    recorder._producers = {}  # from here on, only gradients: dL/dy, then what backward ops make
    recorder._producers[recorder._key(grad)] = ("input", 0)
    recorder.backward_from = len(recorder.rec.ops)
    recorder.running = _RunningNodes(_graph(out.grad_fn))
    try:
        with tracking_modules(recorder), recorder:  # recomputation calls the modules again
            out.backward(grad)
    finally:
        recorder.running.remove()
    result.ops = recorder.rec.ops[recorder.backward_from :]
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
