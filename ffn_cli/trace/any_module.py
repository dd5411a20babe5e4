"""`trace_module(...)`: any nn.Module (the user's own, transformers' MLP) run once under the
same recorder as the registry's variants, its steps grouped by its structure, into the same
TraceResult. Nothing is known of it but what the run shows: no formulas beyond torch's own
layers, no reference to check against."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ffn_cli.device import preflight, resolve_device_dtype
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.modules.user import caller_rng_kept
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import check_int
from ffn_cli.trace.collapse import linear_collapses
from ffn_cli.trace.gc_pause import gc_paused
from ffn_cli.trace.recorder import ForwardError, dtype_name, record
from ffn_cli.trace.reference_match import match_reference
from ffn_cli.trace.result import ParamInfo, TracedModule, TraceResult, TraceStep
from ffn_cli.trace.run import MAX_VALUES, MODES, RUNTIME_BYTES, _make_input, _param_groups, _validate_backward
from ffn_cli.trace.steps import group_steps
from ffn_cli.user_code import UserWarnings, running_user_code

__all__ = ["MAX_DEPTH", "infer_d_model", "trace_module"]

MAX_DEPTH = 16


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
                    if len(dims) == 1 or _accepts(module, int(p.shape[dim]), p):
                        return int(p.shape[dim]), f"{where}{leaf} {tuple(p.shape)}, dim {dim}"
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
        module(torch.zeros(1, 1, width, device=dev, dtype=dt))


def _accepts(module: nn.Module, width: int, like: Tensor) -> bool:
    """Whether the module runs on one token of this width (no gradient, random state restored)."""
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            module(torch.zeros(1, 1, width, device=like.device, dtype=like.dtype))
    except Exception:
        return False
    return True


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
    check_int("seed", seed, minimum=0, maximum=2**63 - 1)
    check_int("values", values, minimum=0, maximum=MAX_VALUES)
    opened: tuple[str, ...] = ()
    if depth is None:
        depth, opened = open_wrappers(module)
    check_int("depth", depth, minimum=1, maximum=MAX_DEPTH)
    if mode not in MODES:
        raise FFNError("mode", mode, _("choose one of {modes}").format(modes=", ".join(MODES)))
    loss_name = _validate_backward(backward, loss, checkpoint)
    kept = UserWarnings()
    modes = [(m, m.training) for m in module.modules()]  # the caller's, given back as they were
    try:
        with running_user_code(_("{name} (your module)").format(name=type(module).__name__), kept), caller_rng_kept():
            dev, dt = _place(module, device, dtype)
            if x is not None:
                x = _given_input(x, dev, dt)
                _materialise(module, int(x.shape[-1]), dev, dt, seed)
                width, width_from = int(x.shape[-1]), "the input given"
                batch, seq_len = (int(x.shape[0]), int(x.shape[1])) if x.dim() == 3 else (1, int(x.shape[:-1].numel()))
            else:
                check_int("batch", batch)
                check_int("seq_len", seq_len)
                if d_model is not None:
                    check_int("d_model", d_model)
                    width, width_from = d_model, d_model_from
                else:
                    width, width_from = infer_d_model(module)
                _materialise(module, width, dev, dt, seed)
                _preflight(module, (batch, seq_len, width), dev, dt, backward=backward)
                x = _make_input((batch, seq_len, width), dev, dt, seed)
            module.train(mode == "train")
            torch.manual_seed(stream_seed(seed, Stream.DROPOUT))  # dropout masks in train mode
            try:
                out, rec, steps, backward_result = _run(
                    module,
                    x,
                    backward=backward,
                    loss=loss_name,
                    seed=seed,
                    values=values,
                    checkpoint=checkpoint,
                    dt=dt,
                    depth=depth,
                    aten=aten,
                )
            except FFNRuntimeError as failed:
                hint = _width_hint(module, width, d_model_from) if width_from == d_model_from else ""
                if not hint:
                    raise
                raise FFNRuntimeError(f"{failed}{hint}") from None
            matched = match_reference(module, x, dtype_name(dt)) if reference else None
    finally:
        for sub, training in modes:
            sub.training = training
    notes = (*notes, *(_("your code warned: {warning}").format(warning=w) for w in kept.messages))
    return TraceResult(
        module=TracedModule(
            source, name or type(module).__name__, type(module).__name__, width, width_from, origin, tuple(notes), depth, opened
        ),
        spec=None,
        block=None,
        batch=batch,
        seq_len=seq_len,
        device=str(dev),
        dtype=dtype_name(dt),
        mode=mode,
        seed=seed,
        input_shape=tuple(x.shape),
        output_shape=tuple(out.shape),
        input_stats=rec.input_stats,
        input_values=rec.input_values,
        steps=tuple(steps),
        ops=tuple(op.record for op in rec.ops),
        param_groups=_param_groups(module),
        saved_bytes=rec.saved_bytes,
        activation_bytes_estimate=None,
        backward=backward_result,
        reference=matched,
        warnings=linear_collapses(steps, width),
        unread_params=_unread(module, steps),
        output_member=rec.output_member,
        other_outputs=tuple(rec.other_outputs),
    )


def _run(
    module: nn.Module,
    x: Tensor,
    *,
    backward: bool,
    loss: str,
    seed: int,
    values: int,
    checkpoint: bool,
    dt: torch.dtype,
    depth: int,
    aten: bool = True,
) -> tuple[Any, ...]:
    """The forward under the recorder (and the backward, when asked): output, recording, steps,
    backward result."""
    try:
        if backward:
            from ffn_cli.trace.backward_run import run_backward

            return run_backward(
                None, module, x, loss=loss, seed=seed, values=values, checkpoint=checkpoint, check=False, dtype=dtype_name(dt), depth=depth
            )
        with gc_paused():
            out, rec = record(module, x, values=values, functions=True, aten=aten)
            return out, rec, group_steps(rec, depth), None
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
            raise FFNError("x", type(x).__name__, _("give a tensor, a NumPy array or a list of numbers ({exc})").format(exc=exc)) from None
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


def _forward_failed(module: nn.Module, failed: ForwardError) -> FFNRuntimeError:
    """One line: which module's forward, in which step (its submodule, or its own call), what."""
    where = _("in step {path} ({name})").format(path=failed.path, name=failed.class_name) if failed.path else _("in its own code")
    call = _(" at `{call}`").format(call=failed.call) if failed.call else ""
    meta = _(" (meta tensors hold no values to compute with)") if "meta" in str(failed).lower() else ""
    return FFNRuntimeError(
        _("{name}.forward raised {where}{call}: {failed}{meta}").format(
            name=type(module).__name__, where=where, call=call, failed=failed, meta=meta
        )
    )
