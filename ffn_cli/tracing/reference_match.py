"""`--reference`: did I write it right? The user's module held against every registry FFN.

For each single-FFN variant of the registry (with and without biases, gate and up fused or
apart) whose parameter layout the module's parameters fill exactly, by shape, the module's
weights are placed on that layout in each order their shapes allow (a matrix stored (in, out),
as GPT-2's Conv1D does, transposed), ffn's NumPy float64 reference runs on them and on the
same input, and its output is compared with the module's. The variant whose outputs agree
within the threshold `--check` uses for the dtype is the module's; else the closest is named,
with where the outputs part most.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ffn_cli.device import preflight
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.reference import reference_forward
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.check import CHECK_THRESHOLDS
from ffn_cli.tracing.leaves import flowing_output
from ffn_cli.tracing.ops import op_base
from ffn_cli.tracing.result import OpRecord, ReferenceMatch, VariantFit
from ffn_cli.tracing.torch_names import DispatchMode
from ffn_cli.user_code import users_call, users_op
from ffn_cli.variants import variant_names

__all__ = ["match_reference"]

MAX_ORDERS = 64  # placements tried per layout: same-shaped matrices in every order, capped
FUSED = "gate_up_proj."  # its halves are tried both ways: F.glu takes a·σ(b), up first


def match_reference(module: nn.Module, x: Tensor, dtype: str, output: Tensor | None = None, ops: Sequence[OpRecord] = ()) -> ReferenceMatch:
    """The registry variant `module` computes on `x`, or the closest one (module left in the
    mode it was in). `output` is its eval-mode output on `x` when the trace already has it
    (`ops`, the ops that run recorded): the forward then runs no second time."""
    if x.is_meta:
        raise FFNError(
            "reference", True, _("runs the module and the NumPy reference on values; the meta device holds none: use --device cpu")
        )
    params = _unique_parameters(module)
    threshold = CHECK_THRESHOLDS.get(dtype, CHECK_THRESHOLDS["float32"])
    name = type(module).__name__
    if not params:
        return ReferenceMatch(name, dtype, threshold, None, 0, _("it holds no parameters, and every registry FFN does"))
    width = int(x.shape[-1])
    preflight(sum(p.numel() for _n, p in params) * 8 * 2, x.device, _("--reference (the weights in float64)"), meta_hint=False)
    note = ""
    if output is None:
        output, ops = _eval_output(module, x)
        note = _("--reference ran your forward once more, in eval mode, as the trace ran it in train mode: what it prints shows twice")
    refused = _unlike_any_ffn(output, ops)
    if refused:
        return ReferenceMatch(name, dtype, threshold, None, 0, refused, note)
    y = output.detach().to(device="cpu", dtype=torch.float64).numpy()
    x64 = x.detach().to(device="cpu", dtype=torch.float64).numpy()
    arrays = {n: p.detach().to(device="cpu", dtype=torch.float64).numpy() for n, p in params}
    best: VariantFit | None = None
    tried = 0
    for spec in _candidates(width, [tuple(p.shape) for _n, p in params]):
        for placed in _placements(spec, params):
            tried += 1
            fit = _fit(spec, placed, arrays, x64, y, threshold)
            if fit is not None and (best is None or fit.max_rel_error < best.max_rel_error):
                best = fit
    if not tried:
        reason = _("no registry FFN has its parameters' shapes ({shapes})").format(
            shapes=", ".join(str(tuple(p.shape)) for _n, p in params)
        )
    elif best is None and y.shape != x64.shape:
        reason = _("its output's shape {shape} is not its input's {input}, and every registry FFN gives back the input's shape").format(
            shape=tuple(y.shape), input=tuple(x64.shape)
        )
    elif best is None:
        reason = _("each registry FFN its parameters' shapes fit needs state its parameters do not hold (a sparse mask, a buffer)")
    else:
        reason = ""
    return ReferenceMatch(name, dtype, threshold, best, tried, reason, note)


# aten ops that draw random numbers: in eval mode, a dropout that never asked self.training
RANDOM_OPS = ("bernoulli", "native_dropout", "rand", "randn", "uniform", "normal", "multinomial")
DROPOUT_CALLS = ("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")  # torch calls: arithmetic only when training


def _drawn_at_random(ops: Sequence[OpRecord]) -> str | None:
    """The first op that made the output random: an aten op that draws, or a dropout call that did arithmetic."""
    for op in ops:
        base = op_base(op.op).removesuffix("_").removesuffix("_like")
        if base in RANDOM_OPS or (base in DROPOUT_CALLS and op.elementwise_flops):
            return op.op
    return None


def _unlike_any_ffn(output: Tensor, ops: Sequence[OpRecord]) -> str:
    """Why no registry FFN can match this output, or '': it is drawn at random, complex, or
    not finite."""
    random = _drawn_at_random(ops)
    if random is not None:
        return _(
            "its forward draws random numbers in eval mode ({op}), so its output changes from run to run "
            "(a dropout without training=self.training keeps dropping in eval mode)"
        ).format(op=random)
    if output.is_complex():
        return _("its output is complex ({dtype}), and every registry FFN's is real").format(dtype=str(output.dtype).removeprefix("torch."))
    bad = int((~torch.isfinite(output.detach())).sum())
    if bad:
        return _("{bad} of its {total} outputs are NaN or infinite: there is nothing to compare").format(
            bad=f"{bad:,}", total=f"{output.numel():,}"
        )
    return ""


def _unique_parameters(module: nn.Module) -> list[tuple[str, Tensor]]:
    return list(module.named_parameters())  # a parameter shared by two submodules comes once


class _OpNames(DispatchMode):
    """Names the aten ops a run makes (to see a dropout that runs in eval mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[OpRecord] = []

    def dispatch(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        self.ops.append(OpRecord(len(self.ops), "", f"aten.{func.overloadpacket.__name__}", (), (), "", 0, 0, ()))
        return users_op(func, args, kwargs or {})


def _eval_output(module: nn.Module, x: Tensor) -> tuple[Tensor, list[OpRecord]]:
    """The module's output on x in eval mode, and the aten ops it ran."""
    modes = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        with torch.no_grad(), _OpNames() as seen:
            out = users_call(module, x)
    finally:
        for sub, training in modes:
            sub.training = training
    return flowing_output(out, tuple(x.shape))[1], seen.ops  # the tensor the trace follows


def _candidates(width: int, shapes: list[tuple[int, ...]]) -> Iterator[FFNSpec]:
    """Every single-FFN spec of this width whose parameter count and shapes (up to a
    transpose) are the module's, d_ff read off the matrices."""
    widths = sorted({dim for shape in shapes if len(shape) == 2 for dim in shape if dim != width} | {width})
    wanted = sorted(_key(s) for s in shapes)
    for variant in variant_names():
        for d_ff, bias, fused in itertools.product(widths, (False, True), (False, True)):
            try:
                spec = FFNSpec(variant=variant, d_model=width, d_ff=d_ff, bias=bias, fused_gate_up=fused)
            except FFNError:
                continue  # fused gate/up on a dense variant, biases a variant cannot take
            if spec.mixture is not None:
                continue
            layout = spec.info.param_tensors(spec)
            if sorted(_key(t.shape) for t in layout) == wanted and spec.d_ff == d_ff:
                yield spec


def _key(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(shape))  # a matrix matches its transpose


Placement = tuple[tuple[str, str, bool, bool], ...]  # (module's name, layout's name, transposed, halves swapped)


def _placements(spec: FFNSpec, params: list[tuple[str, Tensor]]) -> Iterator[Placement]:
    """Each way to put the module's parameters on the layout, same-shaped ones in every order
    (the module's own order first)."""
    layout = spec.info.param_tensors(spec)
    options: list[list[tuple[int, bool]]] = []
    for t in layout:
        fits = [(i, False) for i, (_n, p) in enumerate(params) if tuple(p.shape) == t.shape]
        fits += [
            (i, True) for i, (_n, p) in enumerate(params) if p.dim() == 2 and tuple(p.shape)[::-1] == t.shape and t.shape[0] != t.shape[1]
        ]
        options.append(fits)
    count = 0
    for choice in itertools.product(*options):
        if len({i for i, _t in choice}) != len(choice):
            continue  # one parameter in two places
        placed = tuple((params[i][0], t.name, transposed, False) for (i, transposed), t in zip(choice, layout, strict=True))
        yield placed
        if spec.fused_gate_up:  # the same, the fused matrix's halves the other way round
            yield tuple((own, name, transposed, name.startswith(FUSED)) for own, name, transposed, _s in placed)
        count += 1
        if count >= MAX_ORDERS:
            return


def _placed(array: np.ndarray, transposed: bool, swapped: bool) -> np.ndarray:
    out = array.T if transposed else array
    if swapped:
        half = out.shape[0] // 2
        out = np.concatenate([out[half:], out[:half]])
    return out


def _fit(
    spec: FFNSpec, placed: Placement, arrays: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, threshold: float
) -> VariantFit | None:
    weights = {layout_name: _placed(arrays[own], transposed, swapped) for own, layout_name, transposed, swapped in placed}
    try:
        ref = reference_forward(spec, weights, x)
    except (KeyError, ValueError):
        return None  # state beyond the parameters (a sparse mask) the module keeps elsewhere
    if ref.shape != y.shape:
        return None
    diff = np.abs(y - ref)
    scale = max(float(np.abs(ref).max()), np.finfo(np.float64).tiny)
    flat = int(np.argmax(diff))
    token, feature = divmod(flat, y.shape[-1])
    return VariantFit(
        variant=spec.variant,
        formula=spec.info.header_formula(spec),
        placed=placed,
        max_abs_error=float(diff.max()),
        max_rel_error=float(diff.max() / scale),
        worst=(token, feature, float(y.reshape(-1)[flat]), float(ref.reshape(-1)[flat])),
        parted_fraction=float((diff > threshold * scale).mean()),
    )
