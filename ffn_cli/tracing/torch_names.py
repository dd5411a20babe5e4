"""The two torch names with an underscore the tracer uses, kept here and nowhere else.

Each is what torch's own documentation points to, and tests/test_torch_names.py holds each to
its meaning on every torch the project supports (scripts/check_floor_versions.sh runs it there):

- `TorchDispatchMode`, from `torch.utils._python_dispatch`: the extension point the docs'
  "__torch_dispatch__" notes name, and what torch's own `FlopCounterMode` subclasses. ffn's
  modes subclass it through `DispatchMode` and write `dispatch`: `__torch_dispatch__` is
  inherited from a plain class, so torch 2.13 does not wrap it in Dynamo's disable (it wraps a
  mode's own `__torch_dispatch__`, which imports Dynamo and SymPy on the first op, about a
  second). A `torch.compile`d module is still traced (`tests/test_own_module_styles.py`), and
  `tests/test_function_level.py` holds that an aten-level trace imports neither.
- an op's `_schema`, read for one fact (does it write into an argument); where a torch has none,
  the names say it (in-place ops end in "_", out= overloads are named "out"), which is the
  same answer for every op a feed-forward layer runs.

What autograd saves for backward needs none either: the public saved-tensor hooks
(`torch.autograd.graph.saved_tensors_hooks`) see every tensor packed, custom Functions' too.
A storage's identity needs no private name: PyTorch keeps one Python object per live storage,
so its `id` is unique among live storages.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode

from ffn_cli.i18n import _

__all__ = ["DispatchMode", "NoStorage", "storage_id", "writes_an_argument"]


class _CallsDispatch:
    """Where a DispatchMode's `__torch_dispatch__` is defined: outside TorchDispatchMode's
    subclasses, which torch wraps when they define it themselves (see above)."""

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        return self.dispatch(func, types, args, kwargs or {})

    def dispatch(self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError


class DispatchMode(_CallsDispatch, TorchDispatchMode):
    """A TorchDispatchMode whose subclasses write `dispatch(func, types, args, kwargs)` in place
    of `__torch_dispatch__` (kwargs always a dict)."""


class NoStorage(Exception):
    """A tensor that exposes no storage: one a torch.func transform wraps (vmap's batched
    tensor), seen above the transform; below it, at the aten level, its values are plain."""


def storage_id(t: Tensor) -> int:
    """The identity of t's storage: unique among live storages (parameters live throughout)."""
    try:
        return id(t.untyped_storage())
    except NotImplementedError:
        raise NoStorage(_("a tensor inside a torch.func transform (vmap) holds no storage ffn can follow")) from None


_WRITES: dict[Any, bool] = {}


def writes_an_argument(func: Any) -> bool:
    """Whether an aten op writes into one of its arguments (in-place and out= variants)."""
    if func not in _WRITES:
        schema = getattr(func, "_schema", None)
        if schema is not None:
            _WRITES[func] = any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)
        else:
            overload = func.name().rsplit(".", 1)[-1] if "." in func.name() else ""
            _WRITES[func] = func.overloadpacket.__name__.endswith("_") or overload.startswith("out")
    return _WRITES[func]
