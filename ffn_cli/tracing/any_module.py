"""`trace_module(...)`: any nn.Module (the user's own, transformers' MLP) run once under the
same recorder as the registry's variants, its steps grouped by its structure, into the same
TraceResult. Nothing is known of it but what the run shows: no formulas beyond torch's own
layers, no reference to check against."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from ffn_cli.device import preflight, resolve_device_dtype
from ffn_cli.errors import FFNError, FFNRuntimeError, first_line
from ffn_cli.i18n import _
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import check_int
from ffn_cli.tracing.backward_run import run_backward
from ffn_cli.tracing.collapse import linear_collapses
from ffn_cli.tracing.gc_pause import gc_paused
from ffn_cli.tracing.pipeline import MAX_DEPTH, RUNTIME_BYTES, Placed, Recorded, RunOptions, make_input, run_target
from ffn_cli.tracing.recorder import ForwardError, dtype_name, record
from ffn_cli.tracing.reference_match import match_reference
from ffn_cli.tracing.result import ParamInfo, TracedModule, TraceResult, TraceStep
from ffn_cli.tracing.steps import group_steps
from ffn_cli.user_code import UserWarnings, ffns_fault, running_user_code, users_call

__all__ = ["MAX_DEPTH", "ModuleTarget", "infer_d_model", "trace_module"]


def infer_d_model(module: nn.Module) -> tuple[int, str]:
    """The input width the module expects, and where it was read: the first linear's
    in_features, a norm's width, or the width of the first matrix the module holds itself that
    a one-token trial run accepts (F.linear reads a weight as (out, in), x·W as (in, out)). A
    lazy module (nn.LazyLinear) knows no input width before its first call: the width its last
    linear returns stands for it, as an FFN maps d_model back to d_model."""
    if _is_lazy(module):
        outputs = [(path, sub.out_features) for path, sub in module.named_modules() if isinstance(sub, nn.Linear)]
        if not outputs:
            raise FFNError("d_model", None, _("a lazy module knows its input width only once it runs: give --d-model"))
        path, width = outputs[-1]
        return width, _("{path}.out_features: a lazy module's input width, as an FFN returns the width it takes").format(path=path)
    for path, sub in module.named_modules():
        where = f"{path}." if path else ""
        if isinstance(sub, nn.Linear):
            return sub.in_features, f"{where}in_features"
        if isinstance(sub, (nn.LayerNorm, nn.RMSNorm)) and sub.normalized_shape:
            return int(sub.normalized_shape[-1]), f"{where}normalized_shape"
        for leaf, p in sub.named_parameters(recurse=False):
            if p.dim() in (2, 3):  # a matrix, or stacked experts' matrices (E, ·, ·)
                dims = (p.dim() - 1, p.dim() - 2)
                for dim in dims if p.shape[dims[0]] != p.shape[dims[1]] else dims[:1]:
                    failed = _fails_on(module, int(p.shape[dim]), p)
                    if failed is None:
                        return int(p.shape[dim]), f"{where}{leaf} {tuple(p.shape)}, dim {dim}"
                    op = needs_values(failed) if p.is_meta else None
                    if op is not None:
                        raise routes_by_value(module, op)
                raise FFNError(
                    "d_model",
                    None,
                    _("neither width of {where}{leaf} {shape} runs the module: give --d-model").format(
                        where=where, leaf=leaf, shape=tuple(p.shape)
                    ),
                )
    raise FFNError("d_model", None, _("could not be read from the module (no linear layer or weight matrix): give --d-model"))


def open_wrappers(module: nn.Module) -> tuple[int, tuple[str, ...]]:
    """The depth at which every step is one of the module's own layers (a submodule with no
    submodules of its own) or a torch call: wrappers (an nn.Sequential in an nn.Sequential, T5's
    DenseReluDense, torch.compile's _orig_mod) are opened, and named, on the way."""
    parents = [path for path, sub in module.named_modules() if path and any(True for _c in sub.children())]
    levels = [path.count(".") + 1 for path, _sub in module.named_modules() if path and path not in parents]
    depth = min(MAX_DEPTH, max(levels, default=1))
    opened = [path for path in parents if path.count(".") + 1 < depth]
    # Named by the outermost: `experts` stands for experts.0, experts.1, …
    return depth, tuple(p for p in opened if p.rpartition(".")[0] not in opened)


def _is_lazy(module: nn.Module) -> bool:
    return any(isinstance(p, nn.parameter.UninitializedParameter) for p in module.parameters())


def _materialise(module: nn.Module, width: int, dev: torch.device, dt: torch.dtype, seed: int) -> None:
    """A lazy module's parameters made by one call on a token of `width`, drawn from the
    weights' stream; a meta module's stay shapes."""
    if not _is_lazy(module):
        return
    torch.manual_seed(stream_seed(seed, Stream.WEIGHTS))
    with torch.no_grad():
        users_call(module, torch.zeros(1, 1, width, device=dev, dtype=dt))


def _fails_on(module: nn.Module, width: int, like: Tensor) -> BaseException | None:
    """What the module raises on one token of this width (no gradient, random state
    restored); None when it runs."""
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            users_call(module, torch.zeros(1, 1, width, device=like.device, dtype=like.dtype))
    except Exception as exc:  # the user's module at a width it may not take: what it raises says no
        if ffns_fault(exc):
            raise
        return exc
    return None


# What torch says when an op's result (its shape, or a Python value) depends on the values:
# on meta it cannot run. Each marker, and the op it names.
_VALUE_MARKERS = {
    "torch.nonzero()": "nonzero",
    "item() cannot be called on meta": "item",
    "no data!": "tolist",
    "repeat_interleave a meta tensor": "repeat_interleave",
    "aten::_unique2": "unique",
    "aten::masked_select": "masked_select",
    "aten::bincount": "bincount",
    "aten::histc": "histc",
}


def needs_values(exc: BaseException) -> str | None:
    """The op that failed on meta because its result depends on the values (a router's
    `nonzero`, a `.item()`), or None for any other failure."""
    text = str(exc)
    return next((op for marker, op in _VALUE_MARKERS.items() if marker in text), None)


def routes_by_value(module: nn.Module, op: str) -> FFNError:
    """The one line for a module that picks its tokens by value, run on meta."""
    return FFNError(
        "device",
        "meta",
        _(
            "{name} routes by value (its forward calls {op}): which tokens go where depends on the values, "
            "and meta tensors hold none; trace it on --device cpu"
        ).format(name=type(module).__name__, op=op),
    )


def _place(module: nn.Module, device: str | None, dtype: str | None) -> tuple[torch.device, torch.dtype]:
    """Where the module runs: as asked (moving it there), or where its parameters already are."""
    first = next(iter(module.parameters()), None)
    here_device = first.device if first is not None else torch.device("cpu")
    here_dtype = first.dtype if first is not None and first.is_floating_point() else torch.float32
    dev, dt = resolve_device_dtype(device or str(here_device), dtype or dtype_name(here_dtype))
    if first is not None and (first.device.type != dev.type or (first.is_floating_point() and first.dtype != dt)):
        if first.is_meta and dev.type != "meta":
            raise FFNError("device", str(dev), _("the module's parameters are on meta (they hold no values): build it on that device"))
        module.to(device=dev, dtype=dt)
    return dev, dt


@dataclass(frozen=True, eq=False)
class ModuleTarget:
    """Any nn.Module as a trace target: run where its parameters are (or moved where asked), on
    `x` or a seeded input of the width it reads; its steps its children's calls and its own
    torch calls; with `reference`, the registry FFN it computes (`match_reference`). Its code is
    the user's: contained, its warnings kept, its modes and the caller's random state given back."""

    module: nn.Module
    x: Any = None
    d_model: int | None = None
    d_model_from: str = "d_model"  # how the option giving d_model is named in a hint
    reference: bool = False
    source: str = "module"
    name: str | None = None
    origin: str = ""
    notes: Sequence[str] = ()
    warned: UserWarnings = field(default_factory=UserWarnings)

    @contextmanager
    def running(self) -> Iterator[None]:
        modes = [(m, m.training) for m in self.module.modules()]  # the caller's, given back as they were
        try:
            with running_user_code(_("{name} (your module)").format(name=type(self.module).__name__), self.warned):
                yield
        finally:
            for sub, training in modes:
                sub.training = training

    def place(self, run: RunOptions) -> Placed:
        module = self.module
        depth, opened = (run.depth, ()) if run.depth is not None else open_wrappers(module)
        dev, dt = _place(module, run.device, run.dtype)
        if self.x is not None:
            x = _given_input(self.x, dev, dt)
            _materialise(module, int(x.shape[-1]), dev, dt, run.seed)
            return Placed(module, x, dev, int(x.shape[-1]), "the input given", depth, opened)
        if self.d_model is not None:
            check_int("d_model", self.d_model)
            width, width_from = self.d_model, self.d_model_from
        else:
            width, width_from = infer_d_model(module)
        _materialise(module, width, dev, dt, run.seed)
        _preflight(module, (run.batch, run.seq_len, width), dev, dt, backward=run.backward)
        x = make_input((run.batch, run.seq_len, width), dev, dt, run.seed)
        return Placed(module, x, dev, width, width_from, depth, opened)

    def record(self, placed: Placed, run: RunOptions) -> Recorded:
        try:
            return _run(placed, run)
        except FFNRuntimeError as failed:
            hint = _width_hint(placed.module, placed.width, self.d_model_from) if placed.width_from == self.d_model_from else ""
            if not hint:
                raise
            raise FFNRuntimeError(f"{failed}{hint}") from None

    def identity(self, placed: Placed) -> TracedModule:
        module = self.module
        notes = (*self.notes, *(_("your code warned: {warning}").format(warning=w) for w in self.warned.messages))
        return TracedModule(
            self.source,
            self.name or type(module).__name__,
            type(module).__name__,
            placed.width,
            placed.width_from,
            self.origin,
            tuple(notes),
            placed.depth,
            placed.opened,
        )

    def findings(self, placed: Placed, recorded: Recorded, run: RunOptions) -> dict[str, Any]:
        matched = None
        if self.reference:  # an eval-mode trace's output is the one to compare: the forward runs once
            output = recorded.out if run.mode == "eval" else None
            ops = [op.record for op in recorded.rec.ops]
            matched = match_reference(placed.module, placed.x, placed.dtype, output, ops)
        return {
            "spec": None,
            "block": None,
            "activation_bytes_estimate": None,
            "reference": matched,
            "warnings": linear_collapses(recorded.steps, placed.width),
            "unread_params": _unread(placed.module, recorded.steps),
        }


def trace_module(
    module: nn.Module,
    x: Tensor | None = None,
    *,
    batch: int = 2,
    seq_len: int = 5,
    d_model: int | None = None,
    d_model_from: str = "d_model",
    device: str | None = None,
    dtype: str | None = None,
    seed: int = 0,
    mode: str = "eval",
    values: int = 0,
    depth: int | None = None,
    backward: bool = False,
    loss: str | None = None,
    checkpoint: bool = False,
    reference: bool = False,
    source: str = "module",
    name: str | None = None,
    origin: str = "",
    notes: Sequence[str] = (),
    aten: bool = True,
) -> TraceResult:
    """Run `module` once on `x` (or a seeded (batch, seq_len, d_model) normal input) under the
    recorder and return its steps: its children's calls (`depth` levels deep) and its own torch
    calls between them; with `backward`, then its backward from the gradient `loss` makes; with
    `reference`, the registry FFN it computes (`match_reference`)."""
    options = RunOptions(
        batch=batch, seq_len=seq_len, device=device, dtype=dtype, seed=seed, mode=mode, values=values, depth=depth,
        backward=backward, loss=loss, checkpoint=checkpoint, aten=aten,
    )  # fmt: skip
    target = ModuleTarget(module, x, d_model, d_model_from, reference, source, name, origin, notes)
    return run_target(target, options)


def _run(placed: Placed, run: RunOptions) -> Recorded:
    """The forward under the recorder (and the backward, when asked), grouped `placed.depth` deep."""
    module, x = placed.module, placed.x
    try:
        if run.backward:
            out, rec, steps, backward = run_backward(
                None,
                module,
                x,
                loss=run.loss_name,
                seed=run.seed,
                values=run.values,
                checkpoint=run.checkpoint,
                check=False,
                dtype=placed.dtype,
                depth=placed.depth,
            )
            return Recorded(out, rec, steps, backward)
        with gc_paused():
            out, rec = record(module, x, values=run.values, functions=True, aten=run.aten)
            return Recorded(out, rec, group_steps(rec, placed.depth), None)
    except ForwardError as failed:
        raise _forward_failed(module, failed) from None


def _unread(module: nn.Module, steps: Sequence[TraceStep]) -> tuple[ParamInfo, ...]:
    """The parameters no step (nor substep) read: counted in the module's total, used by nothing."""
    read: set[str] = set()
    pending = list(steps)
    while pending:
        step = pending.pop()
        read.update(p.name for p in step.params)
        pending += step.substeps
    return tuple(ParamInfo(name, tuple(p.shape)) for name, p in module.named_parameters() if name not in read)


def _width_hint(module: nn.Module, given: int, option: str) -> str:
    """After a forward fails on a width the user gave: the width the module reads, if another."""
    try:
        width, where = infer_d_model(module)
    except FFNError:
        return ""
    if width == given:
        return ""
    return _("; the module reads d_model {width} (from {where}): give {option} {width}, or drop it").format(
        width=width, where=where, option=option
    )


def _given_input(x: Any, dev: torch.device, dt: torch.dtype) -> Tensor:
    """The caller's input as a tensor on the module's device: a tensor, a NumPy array or a
    nested list of numbers; one with no values (meta) only for a module on meta, and one token at least."""
    if not isinstance(x, Tensor):
        try:
            x = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise FFNError(
                "x", type(x).__name__, _("give a tensor, a NumPy array or a list of numbers ({exc})").format(exc=first_line(exc))
            ) from None
    if x.dim() < 1:
        raise FFNError("x", tuple(x.shape), _("needs at least one dimension, the model width last"))
    if x.numel() == 0:
        raise FFNError("x", tuple(x.shape), _("holds no values: give at least one token of at least one feature"))
    if x.is_meta and dev.type != "meta":
        raise FFNError(
            "x",
            "meta",
            _("is on meta (it holds no values) but the module runs on {device}: give x with values, or device='meta'").format(device=dev),
        )
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(torch.float32)
    return x.to(device=dev, dtype=dt)


def _preflight(module: nn.Module, shape: tuple[int, int, int], dev: torch.device, dt: torch.dtype, *, backward: bool) -> None:
    """Refuse before allocating what cannot fit: the input, an output as large, and the widest
    intermediate any of the module's linears makes (doubled for the gradients of a backward).
    The module's parameters are already where it runs."""
    if dev.type == "meta":
        return
    tokens, width = shape[0] * shape[1], shape[2]
    widest = max([width, *(m.out_features for m in module.modules() if isinstance(m, nn.Linear))])
    element = torch.empty((), dtype=dt).element_size()
    need = tokens * (2 * width + widest) * element + RUNTIME_BYTES
    preflight(need * (2 if backward else 1), dev, _("this trace"))


def _forward_failed(module: nn.Module, failed: ForwardError) -> FFNError | FFNRuntimeError:
    """One line: which module's forward, in which step (its submodule, or its own call), what;
    or, on meta, that it routes by value."""
    op = needs_values(failed.error)
    if op is not None and any(p.is_meta for p in module.parameters()):
        return routes_by_value(module, op)
    where = _("in step {path} ({name})").format(path=failed.path, name=failed.class_name) if failed.path else _("in its own code")
    call = _(" at `{call}`").format(call=failed.call) if failed.call else ""
    meta = _(" (meta tensors hold no values to compute with)") if "meta" in str(failed).lower() else ""
    return FFNRuntimeError(
        _("{name}.forward raised {where}{call}: {failed}{meta}").format(
            name=type(module).__name__, where=where, call=call, failed=failed, meta=meta
        )
    )
