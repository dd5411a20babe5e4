"""Record a forward at the torch-function level: `F.linear`, `F.silu`, `x * y`, `torch.topk`.

A `torch.overrides.TorchFunctionMode` sees each torch call as the forward makes it, before it
splits into aten ops, with fewer ops to look at and no decomposition, so a trace that shows
no aten op (the default view) records here. Each call becomes one op of the recording,
with its FLOPs from the same formulas the aten level uses (`call_rule`); a call this file
cannot count runs under the aten-level recorder instead, so its ops are exactly those the
dispatch level sees. tests/test_function_level.py holds the two levels to the same steps.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from torch import Tensor
from torch.overrides import TorchFunctionMode

from ffn_cli.tracing.calls import call_name
from ffn_cli.tracing.ops import ELEMENTWISE_FLOPS, REDUCTION_OPS, elementwise_flops
from ffn_cli.tracing.torch_names import NoStorage
from ffn_cli.user_code import users_op

__all__ = ["CallSink", "Flops", "FunctionLevel", "call_rule"]

# Calls whose result is one aten op of the same name (or the one named here): their FLOPs are
# that op's, by `ops.elementwise_flops`.
_SAME_AS_ATEN = {name: name for name in ELEMENTWISE_FLOPS if not name.endswith("_backward") and not name.startswith("_")}
_SAME_AS_ATEN |= {"truediv": "div", "softmax": "_softmax", "layer_norm": "native_layer_norm", "gelu": "gelu", "index_add": "index_add"}
_SAME_AS_ATEN |= {"square": "pow", "softplus": "softplus"}
_SAME_AS_ATEN |= {name: name for name in REDUCTION_OPS}
# Calls that move, select, compare or allocate values: no FLOPs, whatever aten ops they become.
# (Not max and min: torch.max(a, b) is aten's maximum, one FLOP per element.)
_NO_FLOPS = frozenset(
    (
        "view", "reshape", "transpose", "t", "permute", "unsqueeze", "squeeze", "expand", "expand_as", "contiguous",
        "flatten", "unflatten", "chunk", "split", "unbind", "getitem", "setitem", "cat", "stack", "to", "float",
        "half", "bfloat16", "double", "type_as", "clone", "zeros", "zeros_like", "ones", "ones_like", "empty",
        "empty_like", "full", "full_like", "new_zeros", "new_ones", "new_empty", "new_full", "arange", "topk",
        "sort", "argsort", "argmax", "argmin", "where", "clamp", "clip", "masked_fill", "eq", "ne", "lt", "gt",
        "le", "ge", "and", "or", "logical_and", "logical_or", "logical_not", "nonzero", "bincount", "scatter",
        "gather", "index_select", "one_hot", "repeat", "repeat_interleave", "fill", "zero", "copy", "narrow",
        "select", "movedim", "flip", "roll", "tril", "triu", "randperm", "tensor", "as_tensor", "long", "int",
        "bool", "type", "masked_select", "index_put", "cumsum", "any", "all", "count_nonzero",
    )
)  # fmt: skip
# Matrix products by their operands' last dimensions: 2·(elements out)·k, as flop_registry counts mm/bmm.
_MATMULS = ("matmul", "mm", "bmm")


# Calls that answer about a tensor (x.shape, x.size(), x.dim()): nothing to record.
_METADATA = frozenset(("size", "dim", "numel", "stride", "storage_offset", "is_contiguous", "is_floating_point"))
_METADATA |= {"is_complex", "len", "item", "tolist", "format", "repr", "data_ptr", "element_size", "nelement", "ndimension"}
_METADATA |= {"hash", "requires_grad", "register_hook", "retain_grad", "untyped_storage", "is_set_to", "get_device"}
_METADATA |= {"promote_types", "result_type", "can_cast", "is_tensor", "is_nonzero", "equal"}

# (inputs, outputs) → (matmul, elementwise) FLOPs.
Flops = Callable[[list[Tensor], list[Tensor]], tuple[int, int]]


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], i: int, name: str, default: Any = None) -> Any:
    return kwargs[name] if name in kwargs else args[i] if len(args) > i else default


def call_rule(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Flops | None:
    """How to count one torch call's FLOPs as the aten ops it becomes count them; None for a
    call counted only at the aten level (einsum, an RMSNorm, `1 − x`, …)."""
    raw = str(getattr(func, "__name__", ""))
    if raw.startswith("__r") and raw not in ("__rmul__", "__radd__"):
        return None  # 1 − x, 1 / x: aten ops of their own (rsub, reciprocal and mul)
    name = call_name(func)
    if name == "linear":
        weight, bias = _arg(args, kwargs, 1, "weight"), _arg(args, kwargs, 2, "bias")
        x = args[0] if args else kwargs.get("input")
        if not (isinstance(weight, Tensor) and weight.dim() == 2 and isinstance(x, Tensor) and x.dim() >= 2):
            return None
        k, biased = int(weight.shape[1]), isinstance(bias, Tensor)
        return lambda inputs, outputs: (2 * outputs[0].numel() * k, outputs[0].numel() if biased else 0)
    if name == "addmm":  # bias + x @ w: GPT-2's Conv1D
        bias, a, b = (*args, None, None, None)[:3]
        if not (isinstance(a, Tensor) and isinstance(b, Tensor) and a.dim() == 2 and b.dim() == 2 and not kwargs):
            return None
        k = int(a.shape[-1])
        return lambda inputs, outputs: (2 * outputs[0].numel() * k, outputs[0].numel())
    if name in _MATMULS:
        a, b = (*args, None, None)[:2]
        if not (isinstance(a, Tensor) and isinstance(b, Tensor) and a.dim() >= 2 and b.dim() >= 2):
            return None
        k = int(a.shape[-1])
        return lambda inputs, outputs: (2 * outputs[0].numel() * k, 0)
    if name == "dropout":
        p, training = _arg(args, kwargs, 1, "p", 0.5), _arg(args, kwargs, 2, "training", True)
        if not (isinstance(p, (int, float)) and 0 < p < 1):
            return None
        return lambda inputs, outputs: (0, 2 * outputs[0].numel() if training else 0)
    if name == "gelu":
        how = {"approximate": _arg(args, kwargs, 1, "approximate", "none")}
        return lambda inputs, outputs: (0, elementwise_flops("gelu", how, inputs, outputs))
    if name in _SAME_AS_ATEN:
        op = _SAME_AS_ATEN[name]
        return lambda inputs, outputs: (0, elementwise_flops(op, kwargs, inputs, outputs))
    if name in _NO_FLOPS:
        return _none
    return None


def _none(inputs: list[Tensor], outputs: list[Tensor]) -> tuple[int, int]:
    return 0, 0


def _writes(func: Any, kwargs: dict[str, Any]) -> bool:
    """Whether the call writes into a tensor it was given (x.mul_(y), x += y, x[i] = v, out=)."""
    raw = str(getattr(func, "__name__", ""))
    dunder = raw.startswith("__") and raw.endswith("__")
    return (raw.endswith("_") and not dunder) or raw.startswith("__i") or raw == "__setitem__" or "out" in kwargs


class CallSink(AbstractContextManager[Any], Protocol):
    """What FunctionLevel hands calls to (the Recorder): entered, it records at the aten level."""

    @property
    def paused(self) -> bool: ...

    def record_call(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, flops: Flops, *, writes: bool) -> None: ...


class FunctionLevel(TorchFunctionMode):
    """Hands each top-level torch call of a forward to `recorder` as one op; a call it cannot
    count runs with the recorder's aten level on, for that call alone."""

    def __init__(self, recorder: CallSink) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        recorder = self.recorder
        if recorder.paused:  # the recorder's own statistics, between ops
            return users_op(func, args, kwargs)
        rule = call_rule(func, args, kwargs)
        if rule is None:
            if call_name(func) in _METADATA:
                return users_op(func, args, kwargs)
            # counted as the aten ops it becomes; a property (x.shape, x.T) dispatches only if it computes
            with recorder:
                return users_op(func, args, kwargs)
        out = users_op(func, args, kwargs)
        writes = _writes(func, kwargs)
        if writes or not any(out is a for a in args):  # x.to(its own device), x.contiguous(): no op ran
            # A call inside vmap is not recorded here: its result, which no recorded call made, sends
            # the forward to the aten level, which sees its batched ops.
            with contextlib.suppress(NoStorage):
                recorder.record_call(func, args, kwargs, out, rule, writes=writes)
        return out
