"""Keep SymPy out of a traced forward whose shapes are plain integers.

PyTorch's Python meta kernels (those of `aten.mm`, `aten.silu`, `empty_like`… that run on
`--device meta`) import SymPy, a quarter of `import torch` again, to answer questions whose
answer on plain values is known without it: `torch._check(cond)` and the kernels ask
`torch.fx.experimental.symbolic_shapes` (which imports SymPy) whether a plain bool holds
(`expect_true`, `guard_or_false`, `sym_eq`…), and type promotion imports SymPy itself only to
ask whether an argument is a `sympy.Basic`, which no object is while SymPy was never imported.

So, while neither is imported yet, stand-ins take their place for the duration of the run:

- `symbolic_shapes`: answers the questions a forward asks (`_ANSWERS`) when every argument is
  a plain Python value, exactly as the real functions do for such values;
- `sympy`: holds `Basic`, which no object is an instance of until the real SymPy is loaded
  (and then exactly the real one's instances are).

Anything else (a symbolic value, another name, a submodule) imports the real module, which then
replaces the stand-in for good. Nothing is left changed afterwards.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import operator
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["sympy_left_out"]

_SYMPY = "sympy"
_SHAPES = "torch.fx.experimental.symbolic_shapes"


# symbolic_shapes on plain values --------------------------------------------------------------


def _is_bool(a: Any) -> bool:
    return type(a) is bool


def _all_bools(x: Any, *others: Any) -> bool:
    return all(type(a) is bool for a in (x, *others))


def _comparable(x: Any, y: Any) -> bool:
    """Plain ints (or bools) on both sides, or sequences of them (nested) whose lengths differ
    or whose items are comparable in turn."""
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        return len(x) != len(y) or all(_comparable(a, b) for a, b in zip(x, y, strict=True))
    return type(x) in (int, bool) and type(y) in (int, bool)


def _sym_eq(x: Any, y: Any) -> bool:
    # symbolic_shapes.sym_eq on plain values: sequences compare item by item, and by length.
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        return len(x) == len(y) and functools.reduce(operator.and_, map(_sym_eq, x, y), True)
    return bool(x == y)


def _not_symbolic(a: Any) -> bool:
    import torch

    return not isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool))


def _identity(a: Any) -> Any:
    return a


def _never(*args: Any, **kwargs: Any) -> bool:
    return False


# name → (whether the arguments are plain, the answer then), each with the real one's signature.
_ANSWERS: dict[str, tuple[Callable[..., bool], Callable[..., Any]]] = {
    "expect_true": (lambda a, skip=0: _is_bool(a), lambda a, skip=0: a),
    "guard_bool": (_is_bool, _identity),
    "guard_or_false": (_is_bool, _identity),
    "guard_or_true": (_is_bool, _identity),
    "statically_known_true": (_is_bool, _identity),
    "guarding_hint_or_throw": (lambda a: type(a) in (int, bool), _identity),
    "has_guarding_hint": (_not_symbolic, lambda a: True),
    "is_nested_int": (_not_symbolic, lambda s: False),
    "sym_and": (_all_bools, lambda x, *others: functools.reduce(operator.and_, others, x)),
    "sym_or": (_all_bools, lambda x, *others: functools.reduce(operator.or_, others, x)),
    "sym_eq": (_comparable, _sym_eq),
    # Deprecated (it warns when called): a forward only imports it, in is_contiguous.
    "guard_size_oblivious": (_never, _identity),
}


def _answering(name: str, plain: Callable[..., bool], answer: Callable[..., Any]) -> Callable[..., Any]:
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        try:
            is_plain = plain(*args, **kwargs)
        except TypeError:  # called otherwise than a forward calls it: the real one answers
            is_plain = False
        if is_plain:
            return answer(*args, **kwargs)
        return getattr(_real(_SHAPES), name)(*args, **kwargs)

    stand_in.__name__ = stand_in.__qualname__ = name
    return stand_in


# the stand-ins ----------------------------------------------------------------------------------


class _ShapesStandIn(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system probing for __path__ and the like
            raise AttributeError(name)
        if name not in _ANSWERS:
            return getattr(_real(_SHAPES), name)
        function = _answering(name, *_ANSWERS[name])
        setattr(self, name, function)
        return function


def _real_sympy_loaded() -> types.ModuleType | None:
    module = sys.modules.get(_SYMPY)
    return None if isinstance(module, _SympyStandIn) else module


class _RealBasic(type):
    """isinstance / issubclass against sympy.Basic: false for everything until the real SymPy
    is loaded (no SymPy object exists before), then the real answer."""

    def __instancecheck__(cls, obj: Any) -> bool:
        real = _real_sympy_loaded()
        return real is not None and isinstance(obj, real.Basic)

    def __subclasscheck__(cls, sub: Any) -> bool:
        real = _real_sympy_loaded()
        return real is not None and issubclass(sub, real.Basic)


class _Basic(metaclass=_RealBasic):
    """sympy.Basic while SymPy is not imported."""


class _SympyStandIn(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name == "Basic" and _real_sympy_loaded() is None:
            return _Basic
        return getattr(_real(_SYMPY), name)


class _ImportsRealSympy(importlib.abc.MetaPathFinder):
    """A SymPy submodule asked for during the run: the real SymPy first, then that submodule
    as the real SymPy loaded it, not a second copy."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: types.ModuleType | None = None) -> Any:
        if not name.startswith(_SYMPY + "."):
            return None
        _real(_SYMPY)
        loaded = sys.modules.get(name)
        if loaded is None:
            return None  # one the real SymPy does not load itself: found as usual, in its folder
        spec = importlib.util.spec_from_loader(name, _Loaded(loaded))
        # The import system, finding the name loaded meanwhile, loads from that module's own
        # spec: lend it ours until _Loaded puts its own back.
        loaded.__spec__ = spec
        return spec


class _Loaded(importlib.abc.Loader):
    """Hands the import system a module that is already loaded, as it was."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module, self.spec = module, module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self.spec


_FINDER = _ImportsRealSympy()


def _real(name: str) -> types.ModuleType:
    """The real module, imported now if only its stand-in was there (which it then replaces);
    symbolic_shapes imports SymPy, so the real SymPy comes first."""
    if name == _SHAPES:
        _real(_SYMPY)
    if isinstance(sys.modules.get(name), (_ShapesStandIn, _SympyStandIn)):
        del sys.modules[name]
    if name == _SYMPY and _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    return importlib.import_module(name)


@contextmanager
def sympy_left_out() -> Iterator[None]:
    """Run the body with the stand-ins in place, if neither module is imported yet."""
    sympy_spec = None if _SYMPY in sys.modules or _SHAPES in sys.modules else importlib.util.find_spec(_SYMPY)
    if sympy_spec is None or not sympy_spec.submodule_search_locations:
        yield
        return
    parent_name, _, child = _SHAPES.rpartition(".")
    parent = importlib.import_module(parent_name)  # imported by torch itself; `import a.b.c` needs it
    sympy_stand_in, shapes_stand_in = _SympyStandIn(_SYMPY), _ShapesStandIn(_SHAPES)
    sympy_stand_in.__path__ = list(sympy_spec.submodule_search_locations)
    sys.modules[_SYMPY], sys.modules[_SHAPES] = sympy_stand_in, shapes_stand_in
    setattr(parent, child, shapes_stand_in)
    sys.meta_path.insert(0, _FINDER)
    try:
        yield
    finally:
        if _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)
        for name, stand_in in ((_SYMPY, sympy_stand_in), (_SHAPES, shapes_stand_in)):
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
        if getattr(parent, child, None) is shapes_stand_in:
            delattr(parent, child)
