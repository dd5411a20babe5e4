"""The torch function calls of a forward, as steps read them: `F.gelu`, `x * 0.04419`,
`torch.einsum('...e,...de->...d', x, y)`. A TorchFunctionMode sees each call as the user wrote
it (before it decomposes into aten ops), so a step is named after `einsum`, not its `bmm`."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from ffn_cli.user_code import users_op

__all__ = ["CallLabels", "call_formula", "call_name"]

# Python operators on tensors, by the method that implements them.
_OPERATORS = {
    "mul": "*",
    "add": "+",
    "sub": "−",
    "truediv": "/",
    "matmul": "@",
    "pow": "**",
    "and": "&",
    "or": "|",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "gt": ">",
}
_MAX_ARG = 24  # characters of a literal argument shown in a formula


def call_name(func: Any) -> str:
    """A step name for the call: `gelu`, `mul` (for `*`), `einsum`, `getitem` (for `x[...]`)."""
    name = str(getattr(func, "__name__", func))
    if name.startswith("__") and name.endswith("__"):
        name = name.strip("_")
        if name[:1] in ("r", "i") and name[1:] in _OPERATORS:  # __rmul__, __iadd__
            name = name[1:]
    return name.rstrip("_") or "call"


def _is_method(func: Any) -> bool:
    return "Tensor" in str(getattr(func, "__qualname__", ""))


def _prefix(func: Any) -> str:
    module = str(getattr(func, "__module__", "") or "")
    if module.startswith(("torch.nn.functional", "torch._C._nn")):
        return "F."
    return "torch." if module.startswith("torch") else ""


def call_formula(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], name_of: Callable[[Tensor], str | None]) -> str:
    """The call as it reads in the source, tensors named (a parameter or constant by its own
    name, activations x, y, z in order), other arguments shown as literals."""
    letters = iter("xyzuvw")

    def arg(a: Any) -> str:
        if isinstance(a, Tensor):
            return name_of(a) or next(letters, "t")
        if isinstance(a, (list, tuple)) and a and all(isinstance(t, Tensor) for t in a):
            return f"[{len(a)} tensors]"
        if isinstance(a, tuple) and any(isinstance(t, (Tensor, slice)) or t is None or t is Ellipsis for t in a):
            return ", ".join(arg(t) for t in a)  # an index: x[rows, slot, None]
        if isinstance(a, slice):
            return ":".join("" if v is None else str(v) for v in (a.start, a.stop)) + (f":{a.step}" if a.step is not None else "")
        if a is Ellipsis:
            return "..."
        if isinstance(a, float):
            return f"{a:.4g}"
        text = repr(a)
        return text if len(text) <= _MAX_ARG else text[: _MAX_ARG - 1] + "…"

    name = call_name(func)
    defaults = _defaults(func)
    given = {k: v for k, v in kwargs.items() if not k.startswith("_") and not (k in defaults and _same(defaults[k], v))}
    shown = [arg(a) for a in args] + [f"{k}={arg(v)}" for k, v in given.items()]
    raw = str(getattr(func, "__name__", ""))
    if raw.startswith("__r") and len(shown) == 2:  # 0.5 * x arrives as x.__rmul__(0.5)
        shown.reverse()
    if name in _OPERATORS and len(shown) == 2:
        return f"{shown[0]} {_OPERATORS[name]} {shown[1]}"
    if name == "getitem" and len(shown) == 2:
        return f"{shown[0]}[{shown[1]}]"
    if _is_method(func) and shown:
        return f"{shown[0]}.{name}({', '.join(shown[1:])})"
    return f"{_prefix(func)}{name}({', '.join(shown)})"


_DEFAULTS: dict[Any, dict[str, Any]] = {}


def _defaults(func: Any) -> dict[str, Any]:
    """The keyword defaults of a Python function (F.softmax fills in dim=None, dtype=None):
    a formula shows only what the caller chose."""
    if func not in _DEFAULTS:
        try:
            params = inspect.signature(func).parameters.values()
            _DEFAULTS[func] = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
        except (TypeError, ValueError):
            _DEFAULTS[func] = {}
    return _DEFAULTS[func]


def _same(default: Any, value: Any) -> bool:
    return not isinstance(value, Tensor) and type(default) is type(value) and default == value


class CallLabels(TorchFunctionMode):
    """While a top-level torch call runs, `current` holds (its serial, name, formula); calls
    inside it (the mode is off while its handler runs) are part of it."""

    def __init__(self, name_of: Callable[[Tensor], str | None]) -> None:
        super().__init__()
        self.name_of = name_of
        self.current: tuple[int, str, str] | None = None
        self.failed: tuple[int, str, str] | None = None  # the call that raised, if one did
        self._serial = 0
        # The user's plain function the last calls ran in, and their one label.
        self._function_frame: FrameType | None = None
        self._function_label: tuple[int, str, str] = (0, "", "")
        # The user's frame whose TorchScript function the last untracked ops ran in, and their label.
        self._script: tuple[FrameType, int, str] | None = None
        self._script_label: tuple[int, str, str] = (0, "", "")

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        outer = self.current
        if outer is None:
            self.current = self._label(func, args, kwargs)
        try:
            return users_op(func, args, kwargs)
        except Exception:  # whoever's the failure, it is noted and raised on unchanged
            self.failed = self.failed or self.current
            raise
        finally:
            self.current = outer

    def script_label(self) -> tuple[int, str, str] | None:
        """The label of an op no torch call ran: TorchScript runs aten ops with no Python call
        around them, so the scripted function the user's code called there (Megatron's
        `bias_gelu`) names them, one step per invocation; None if the frame calls no such one."""
        frame = _user_frame(inspect.currentframe())
        if frame is None:
            return None
        scripted = [n for n in frame.f_code.co_names if isinstance(frame.f_globals.get(n), torch.jit.ScriptFunction)]
        if len(scripted) != 1:
            return None
        # One invocation: the same frame at the same instruction (the call), calling the same function.
        if self._script is None or self._script[0] is not frame or self._script[1:] != (frame.f_lasti, scripted[0]):
            self._serial += 1
            self._script, self._script_label = (frame, frame.f_lasti, scripted[0]), (self._serial, scripted[0], f"{scripted[0]}(…)")
        return self._script_label

    def _label(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, str, str]:
        """The call's own label; inside a plain Python function of the user's (fairseq's
        `gelu_accurate`), that function's, one for all the torch calls of one invocation."""
        frame = _users_function(inspect.currentframe())
        if frame is not None and frame is self._function_frame:
            return self._function_label
        self._serial += 1
        if frame is None:
            self._function_frame = None
            return (self._serial, call_name(func), call_formula(func, args, kwargs, self.name_of))
        name = _function_name(frame)
        self._function_frame, self._function_label = frame, (self._serial, name, f"{name}(…)")
        return self._function_label

    def forget_frames(self) -> None:
        """Let go of the frames held to group calls: they keep the functions' locals alive."""
        self._function_frame = None
        self._script = None


_TORCH = os.path.dirname(torch.__file__)
_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _function_name(frame: FrameType) -> str:
    """The plain function's name; a custom autograd.Function's forward by its class (`BiasGeLU`),
    which its ctx's node class names (`BiasGeLUBackward`)."""
    ctx = frame.f_locals.get("ctx")
    if frame.f_code.co_name == "forward" and isinstance(ctx, torch.autograd.function.BackwardCFunction):
        return type(ctx).__name__.removesuffix("Backward") or "forward"
    return frame.f_code.co_name


def _user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame of the user's code (not torch's, not ffn's) above this one."""
    while frame is not None:
        file = frame.f_code.co_filename
        if not (file.startswith(_TORCH) or file.startswith(_OURS) or file.startswith("<")):
            return frame
        frame = frame.f_back
    return None


def _users_function(frame: FrameType | None) -> FrameType | None:
    """The outermost frame of a plain function (not a method of a module, not torch's, not
    ffn's) between this call and the module's forward that made it; None if the forward made
    the call itself."""
    found = None
    frame = frame.f_back if frame is not None else None
    while frame is not None:
        file = frame.f_code.co_filename
        owner = frame.f_locals.get("self")
        if isinstance(owner, nn.Module):
            return found  # the forward (or a method) of a module: the plain function below it, if any
        if not (file.startswith(_TORCH) or file.startswith(_OURS) or frame.f_code.co_name.startswith("<")):
            found = frame
        frame = frame.f_back
    return None
