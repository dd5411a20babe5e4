"""Record what a module's forward did, op by op, without keeping any tensor.

`Recorder` is a TorchDispatchMode: it sees every aten op, functional ones included (the
activation, the gate multiply, MoE's top-k and index_add), and works on the meta device.
Forward hooks keep a stack of module paths so each op is attributed to `up_proj`,
`experts.3.gate_proj`, …; tensor storages link each op to the op that produced its inputs.
Intermediates are freed where a plain forward frees them: storages are told apart by serial
numbers (`StorageSerials`), which, unlike addresses, no later storage reuses, and autograd's
saved tensors are measured, then dropped. Nothing is printed from inside a forward: shapes,
FLOPs and statistics all come from here.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.flop_counter import flop_registry

from ffn_cli import regions
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.tracing.calls import CallLabels, call_name
from ffn_cli.tracing.function_level import Flops, FunctionLevel
from ffn_cli.tracing.leaves import flowing_output
from ffn_cli.tracing.ops import SKIPPED_OPS, UNINITIALISED_OPS, conv_backward_flops, elementwise_flops
from ffn_cli.tracing.result import OpRecord, OutputMember, Shape, TensorStats
from ffn_cli.tracing.stats import first_values, tensor_stats
from ffn_cli.tracing.torch_names import DispatchMode, NoStorage, storage_id, writes_an_argument
from ffn_cli.user_code import exception_text, ffn_failed, ffns_fault, real_interrupt, users_call, users_op

__all__ = ["ForwardError", "ModuleCall", "Producer", "RecordedOp", "Recorder", "Recording", "dtype_name", "record"]

# Who produced a tensor: ("op", i), ("call", i) or ("input", 0).
Producer = tuple[str, int]


@dataclass
class RecordedOp:
    """An op plus what grouping needs and users do not: order, owner call, dataflow."""

    record: OpRecord
    seq: int
    call: int
    sources: list[tuple[Producer, Shape]]
    stats: TensorStats | None
    values: tuple[float, ...] | None
    region: str | None = None  # the named step of the forward it ran in (`ffn_cli.regions`)
    function: tuple[int, str, str] | None = None  # the torch call it ran in: (serial, name, formula)


@dataclass
class ModuleCall:
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

    ops: list[RecordedOp] = field(default_factory=list)
    calls: list[ModuleCall] = field(default_factory=list)
    param_shapes: dict[str, Shape] = field(default_factory=dict)
    buffer_names: set[str] = field(default_factory=set)  # of param_shapes' names, those that are buffers
    constant_shapes: dict[str, Shape] = field(default_factory=dict)  # tensor attributes, not registered
    input_stats: TensorStats | None = None
    input_values: tuple[float, ...] | None = None
    saved_bytes: int = 0
    output_member: str = ""  # where the tensor that flows on sat in a tuple / dict output
    other_outputs: list[OutputMember] = field(default_factory=list)


class ForwardError(Exception):
    """A forward not built here raised: where (the module path and class, the torch call) and what."""

    def __init__(self, path: str, class_name: str, call: str, error: BaseException) -> None:
        super().__init__(exception_text(error))
        self.path, self.class_name, self.call, self.error = path, class_name, call, error


class StorageSerials:
    """A serial number per live storage. A freed storage's address can be handed to the next
    one; its serial is never reused, so a freed intermediate cannot be mistaken for a new one
    and no tensor has to be kept alive to prevent it. The storage's Python object lives as
    long as the storage itself (PyTorch preserves it), so a weak reference to it says when
    the storage is freed."""

    def __init__(self) -> None:
        self._serials: dict[int, int] = {}
        self._refs: dict[int, weakref.ref[Any]] = {}
        self._count = 0

    def get(self, t: Tensor) -> int | None:
        """t's storage's serial; None for a storage never seen (or freed since)."""
        return self._serials.get(storage_id(t))

    def get_address(self, address: int) -> int | None:
        """The serial of the live storage at `address` (as `get`, for an address already read)."""
        return self._serials.get(address)

    def of(self, t: Tensor) -> int:
        """t's storage's serial, given now if it has none."""
        storage = t.untyped_storage()
        address = id(storage)
        serial = self._serials.get(address)
        if serial is None:
            serial = self._serials[address] = self._count
            self._count += 1
            self._refs[address] = weakref.ref(storage, self._forget(address))
        return serial

    def _forget(self, address: int) -> Callable[[Any], None]:
        def forget(ref: Any) -> None:
            if self._refs.get(address) is ref:
                del self._refs[address], self._serials[address]

        return forget

    def clear(self) -> None:
        """Stop watching (the weak references go, and their callbacks with them)."""
        self._refs.clear()
        self._serials.clear()


def _tensors(obj: Any) -> list[Tensor]:
    """The tensors in an op's arguments or result, in order (as pytree's leaves, for the tuples,
    lists and dicts aten ops take and return, at a fraction of its cost per op)."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


def _key(serial: int, t: Tensor) -> tuple[Any, ...]:
    return (serial, t.storage_offset(), t.shape, t.stride(), t.dtype)  # torch.Size is a tuple


def dtype_name(dtype: torch.dtype) -> str:
    """torch.float32 → "float32", as results and JSON name dtypes."""
    return str(dtype).removeprefix("torch.")


class Recorder(DispatchMode):
    """Records every aten op of `root`'s forward with its module path, shapes, FLOPs and stats."""

    def __init__(
        self, root: nn.Module, *, stats: bool = True, values: int = 0, keep_graph: bool = False, functions: bool = False, aten: bool = True
    ) -> None:
        super().__init__()
        self.root = root
        # aten: record every aten op (--ops, --json); else each torch call, and a call the
        # function level cannot count as its aten ops (`FunctionLevel`).
        self.aten = aten
        self.missed = False  # the function level saw a tensor it did not see made (TorchScript, …)
        # keep_graph: a backward follows (`trace.backward`): autograd keeps its tensors, the output
        # keeps its graph, and every output stays alive so no storage address is reused mid-trace.
        self.keep_graph = keep_graph
        self._keep: list[Tensor] = []
        self.rec = Recording()
        self.want_stats = stats
        self.values = values
        self._stack: list[int] = []
        self._seq = 0
        self._paused = False
        self._producers: dict[tuple[Any, ...], Producer] = {}
        self._stats_by_key: dict[tuple[Any, ...], TensorStats | None] = {}
        # Statistics by the data they describe: a contiguous view of an output (the view after
        # each addmm, of x before it) holds the very same values, in the same order.
        self._stats_by_data: dict[tuple[Any, ...], TensorStats | None] = {}
        self._serials = StorageSerials()
        self._params: dict[int, str] = {}
        self._saved: dict[int, int] = {}  # bytes per storage serial
        # One walk over the modules for their paths, parameters and buffers (tens of thousands
        # of modules in a large mixture), in named_parameters' then named_buffers' order.
        named = list(root.named_modules())
        self.module_paths = {id(module): path for path, module in named}
        for buffers in (False, True):
            seen: set[int] = set()  # a tensor registered twice (tied) is named once, as torch does
            for path, module in named:
                own = module.named_buffers if buffers else module.named_parameters
                for name, t in own(prefix=path, recurse=False, remove_duplicate=False):
                    if id(t) in seen:
                        continue
                    seen.add(id(t))
                    self._params[storage_id(t)] = name
                    self.rec.param_shapes[name] = tuple(t.shape)
                    if buffers:
                        self.rec.buffer_names.add(name)
        # functions: name each op's torch call (a module not built here is grouped by them), and
        # read the tensors its modules hold as plain attributes (a fixed mask) as constants.
        self.labels = CallLabels(self._tensor_name) if functions else None
        self._constants: dict[int, str] = {}
        for path, module in named if functions else ():
            for leaf, t in vars(module).items():
                if isinstance(t, Tensor) and not isinstance(t, nn.Parameter) and storage_id(t) not in self._params:
                    name = f"{path}.{leaf}" if path else leaf
                    self._constants.setdefault(storage_id(t), name)
                    self.rec.constant_shapes.setdefault(name, tuple(t.shape))

    def _tensor_name(self, t: Tensor) -> str | None:
        """A parameter's, buffer's or constant's name, for the formula of a call that reads it
        (none for a tensor a torch.func transform wraps: its storage is not to be seen)."""
        try:
            storage = storage_id(t)
        except NoStorage:
            return None
        name = self._params.get(storage) or self._constants.get(storage)
        shape = self.rec.param_shapes.get(name or "")
        if name is not None and shape is not None and t.dim() == 2 and tuple(t.shape) == shape[::-1] != shape:
            return name + "ᵀ"  # a transposed view of it (w.t())
        return name

    # dispatch ---------------------------------------------------------------------------

    def dispatch(self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        kwargs = kwargs or {}
        if self._paused:
            return users_op(func, args, kwargs)
        # As FlopCounterMode: ops without a FLOP formula that can decompose are seen as their parts.
        if func not in flop_registry and func is not torch.ops.prim.device.default:
            with self:
                decomposed = users_op(func.decompose, args, kwargs)
            if decomposed is not NotImplemented:
                return decomposed
        out = users_op(func, args, kwargs)
        if writes_an_argument(func):
            self._stats_by_data.clear()  # an in-place op changed some values: measure afresh
        packet = func.overloadpacket
        if packet.__name__ not in SKIPPED_OPS:
            self._paused = True
            try:
                self._record_op(packet, args, kwargs, out)
            finally:
                self._paused = False
        return out

    def _stats(self, t: Tensor) -> TensorStats | None:
        """tensor_stats(t), once per contiguous run of values."""
        if not t.is_contiguous():
            return tensor_stats(t)
        data = (self._serials.of(t), t.storage_offset(), t.numel(), t.dtype)
        if data not in self._stats_by_data:
            self._stats_by_data[data] = tensor_stats(t)
        return self._stats_by_data[data]

    def _key(self, t: Tensor) -> tuple[Any, ...]:
        """Identity of a tensor's data: storage, offset, geometry (robust to autograd's wrappers)."""
        return _key(self._serials.of(t), t)

    def _source(self, t: Tensor, storage: int | None = None) -> tuple[Producer, Shape] | None:
        """Who produced t (whose storage address is `storage`, if known); None for parameters,
        buffers and tensors made outside the forward."""
        serial = self._serials.get(t) if storage is None else self._serials.get_address(storage)
        producer = None if serial is None else self._producers.get(_key(serial, t))
        return None if producer is None else (producer, tuple(t.shape))

    def _record_op(self, packet: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        inputs = _tensors((args, kwargs))
        outputs = _tensors(out)
        if not outputs:
            return
        name = packet.__name__
        weight_grad = None
        if name == "convolution_backward":  # ffn's own rule: FlopCounterMode's ignores groups in dW
            input_grad, weight_grad = conv_backward_flops(args, kwargs)
            matmul = input_grad + weight_grad
        elif packet in flop_registry:
            matmul = int(flop_registry[packet](*args, **kwargs, out_val=out))
        else:
            matmul = _grouped_mm_flops(name, inputs)
        self._append(f"aten.{name}", name, inputs, outputs, matmul, elementwise_flops(name, kwargs, inputs, outputs), weight_grad)

    @property
    def paused(self) -> bool:
        """Whether the recorder itself is running torch code (statistics, hooks): not the forward's."""
        return self._paused

    def record_call(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, flops: Flops, *, writes: bool) -> None:
        """One torch call of the forward as one op (the function level, `FunctionLevel`), its
        FLOPs counted by `flops` as the aten ops it becomes count them."""
        if writes:
            self._stats_by_data.clear()
        inputs = _tensors((args, kwargs))
        outputs = _tensors(out)
        if not outputs and writes and args and isinstance(args[0], Tensor):
            outputs = [args[0]]  # x[i] = v returns nothing: its output is the tensor it wrote, as aten's index_put_
        if not outputs:
            return
        self._paused = True
        try:
            matmul, elementwise = flops(inputs, outputs)
            name = call_name(func)
            name += "_" if writes and name != "setitem" else ""  # x.relu_() is aten's relu_, as steps name it
            self._append(f"torch.{name}", name, inputs, outputs, matmul, elementwise)
        finally:
            self._paused = False

    def _append(
        self, op: str, name: str, inputs: list[Tensor], outputs: list[Tensor], matmul: int, elementwise: int, weight_grad: int | None = None
    ) -> None:
        storages = [storage_id(t) for t in inputs]  # once per tensor: each look-up costs a storage object
        params = tuple(dict.fromkeys(self._params[s] for s in storages if s in self._params))
        constants = tuple(dict.fromkeys(self._constants[s] for s in storages if s in self._constants)) if self._constants else ()
        function = (self.labels.current or self.labels.script_label()) if self.labels is not None else None
        sources = [s for s in map(self._source, inputs, storages) if s is not None]
        if not self.aten and len(sources) < sum(1 for s in storages if s not in self._params and s not in self._constants):
            self.missed = True  # an input no recorded call made: code the function level cannot see ran
        index = len(self.rec.ops)
        # Views of weights (aten.t of W) are weights, not activations: no statistics for them.
        is_weight = storage_id(outputs[0]) in self._params
        meaningful = not is_weight and name not in UNINITIALISED_OPS
        stats = self._stats(outputs[0]) if self.want_stats and meaningful else None
        op_record = OpRecord(
            index,
            self._path(),
            op,
            tuple(tuple(t.shape) for t in inputs),
            tuple(tuple(t.shape) for t in outputs),
            dtype_name(outputs[0].dtype),
            matmul,
            elementwise,
            params,
            constants,
            function[2] if function is not None else "",
            weight_grad,
        )
        values = first_values(outputs[0], self.values) if meaningful else None
        owner = self._stack[-1] if self._stack else -1
        self.rec.ops.append(RecordedOp(op_record, self._next_seq(), owner, sources, stats, values, regions.current(), function))
        for i, t in enumerate(outputs):
            key = self._key(t)
            self._producers[key] = ("op", index)
            if i == 0:
                self._stats_by_key[key] = stats
        if self.keep_graph:
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
            inputs = _tensors(args)
            sources = [s for s in map(self._source, inputs) if s is not None]
            parent = self._stack[-1] if self._stack else None
            call = ModuleCall(len(self.rec.calls), path, module, parent, self._next_seq(), len(self.rec.ops), sources)
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
                key = self._key(output)
                call.output_shape, call.dtype = tuple(output.shape), dtype_name(output.dtype)
                if self.want_stats:
                    call.stats = self._stats_by_key[key] if key in self._stats_by_key else self._stats(output)
                call.values = first_values(output, self.values)
                if isinstance(module, nn.Dropout) and self.want_stats and args and isinstance(args[0], Tensor):
                    before = args[0].detach()
                    call.dropout_changed = int(torch.count_nonzero(output != before))
                    call.dropout_zeroed = int(torch.count_nonzero((output == 0) & (before != 0)))
                self._producers[key] = ("call", call.index)
                self._stats_by_key[key] = call.stats
            elif _tensors(output):  # a tuple (a router's logits, weights and choices): its first tensor's shape
                first = _tensors(output)[0]
                call.output_shape, call.dtype = tuple(first.shape), dtype_name(first.dtype)
                if self.labels is not None:  # a module not built here ((out, bias) of Megatron's linears): its values too
                    self._tuple_output(call, first)
        finally:
            self._paused = False

    def _tuple_output(self, call: ModuleCall, first: Tensor) -> None:
        """The tensor that flows on from a tuple output, its first: statistics and values, and
        the call as its producer."""
        key = self._key(first)
        if self.want_stats and (first.is_floating_point() or first.is_complex()):
            call.stats = self._stats_by_key[key] if key in self._stats_by_key else self._stats(first)
        call.values = first_values(first, self.values)
        if storage_id(first) not in self._params:
            self._producers[key] = ("call", call.index)
            self._stats_by_key[key] = call.stats

    # autograd's saved tensors: what the backward pass would keep -----------------------------

    def pack(self, t: Tensor) -> Tensor | None:
        """Count what autograd would keep for backward, then keep nothing unless a backward
        follows: the forward's intermediates are freed as soon as a plain forward frees them."""
        if storage_id(t) not in self._params:
            self._saved[self._serials.of(t)] = t.untyped_storage().nbytes()
        return t if self.keep_graph else None

    def unpack(self, packed: Any) -> Any:
        """What `pack` kept, handed back to the backward that reads it."""
        if packed is None:
            raise RuntimeError("a traced forward saved nothing for backward")
        return packed

    # the run --------------------------------------------------------------------------------

    def run(self, x: Tensor, call: Callable[[Tensor], Any] | None = None) -> Tensor:
        """module(x) (or call(x), which runs it) under the recorder; the output comes back
        detached (its graph saved nothing). A module returning a tuple (a MoE block's hidden
        states and router logits, Megatron's output and bias) hands on the tensor that flows on
        (`flowing_output`); the others are noted in the recording."""
        self._producers[self._key(x)] = ("input", 0)
        if self.want_stats:
            self.rec.input_stats = self._stats(x)
        self.rec.input_values = first_values(x, self.values)
        try:
            saving = torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)
            labels = self.labels if self.labels is not None else _nothing()
            level = self if self.aten else FunctionLevel(self)
            with tracking_modules(self), saving, level, labels:
                where, out, others = flowing_output(users_call(call or self.root, x), tuple(x.shape))
            if not self.aten and self._source(out) is None and storage_id(out) not in self._params:
                self.missed = True
        except (MemoryError, torch.OutOfMemoryError, FFNError, FFNRuntimeError):
            raise
        except (Exception, SystemExit, KeyboardInterrupt) as exc:
            # The modules built here: their errors are ours, as they are; a real Ctrl-C interrupts.
            if self.labels is None or (isinstance(exc, KeyboardInterrupt) and real_interrupt()):
                raise
            if ffns_fault(exc):
                raise ffn_failed(_("{name}.forward").format(name=type(self.root).__name__), exc) from exc
            module = self.rec.calls[self._stack[-1]].module if self._stack else self.root
            raise ForwardError(self._path(), type(module).__name__, self._call(), exc) from exc
        finally:
            self._stack.clear()
            if self.labels is not None:
                self.labels.forget_frames()
            if not self.keep_graph:
                self._serials.clear()
        self.rec.saved_bytes = sum(self._saved.values())
        self.rec.output_member = where
        self.rec.other_outputs = [OutputMember(w, tuple(t.shape), dtype_name(t.dtype)) for w, t in others]
        return out if self.keep_graph else out.detach()

    def _call(self) -> str:
        current = (self.labels.failed or self.labels.current) if self.labels is not None else None
        return current[2] if current is not None else ""

    def close(self) -> None:
        """Let go of what keep_graph held."""
        self._keep.clear()
        self._serials.clear()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _grouped_mm_flops(name: str, inputs: list[Tensor]) -> int:
    """aten._grouped_mm (transformers' fused experts), which torch's FLOP table lacks: rows of a
    (m, k) matrix, each group of them times its own (k, n) matrix of a stack, 2·m·k·n in all."""
    if name != "_grouped_mm" or len(inputs) < 2 or inputs[0].dim() != 2 or inputs[1].dim() != 3:
        return 0
    m, k = inputs[0].shape
    return 2 * int(m) * int(k) * int(inputs[1].shape[-1])


@contextmanager
def tracking_modules(recorder: Recorder) -> Iterator[None]:
    """Tell `recorder` when each of its root's modules is entered and left. Two global hooks,
    not two per module: a mixture of thousands of experts has tens of thousands of modules,
    most of which (the idle experts) never run."""
    paths = recorder.module_paths

    def enter(module: nn.Module, args: tuple[Any, ...]) -> None:
        path = paths.get(id(module))
        if path is not None:  # one of root's modules, not one run elsewhere meanwhile
            recorder.enter(path, module, args)

    def leave(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if id(module) in paths:
            recorder.exit(module, args, output)

    handles = [nn.modules.module.register_module_forward_pre_hook(enter), nn.modules.module.register_module_forward_hook(leave)]
    try:
        with warnings.catch_warnings():
            # torch warns a compiled module that global hooks fire for its wrapper too: these are
            # ours, and the wrapper's call is a call of the module it wraps, as the steps show it.
            warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks", category=UserWarning)
            yield
    finally:
        for handle in handles:
            handle.remove()


def record(
    module: nn.Module, x: Tensor, *, stats: bool = True, values: int = 0, functions: bool = False, aten: bool = True
) -> tuple[Tensor, Recording]:
    """Run module(x) under a Recorder (with autograd on, to see what it saves for backward);
    `functions`: name each op's torch call too, and read tensor attributes as constants;
    `aten`: record aten ops, else torch calls (`FunctionLevel`: the same steps, no Dynamo)."""
    # TorchScript runs no torch call a TorchFunctionMode sees: a scripted module is recorded at
    # the aten level; a scripted function is found by the tensors it made and recorded again.
    aten = aten or any(isinstance(m, torch.jit.ScriptModule) for m in module.modules())
    random_state = _random_state(x.device)
    recorder = Recorder(module, stats=stats and not x.is_meta, values=values, functions=functions, aten=aten)
    with torch.enable_grad():
        out = recorder.run(x)
    if recorder.missed:
        _restore_random_state(x.device, random_state)  # the same dropout masks the second time
        recorder = Recorder(module, stats=stats and not x.is_meta, values=values, functions=functions, aten=True)
        with torch.enable_grad():
            out = recorder.run(x)
    return out, recorder.rec


def _random_state(device: torch.device) -> tuple[Tensor, Tensor | None]:
    return torch.get_rng_state(), torch.cuda.get_rng_state(device) if device.type == "cuda" else None


def _restore_random_state(device: torch.device, state: tuple[Tensor, Tensor | None]) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1], device)
