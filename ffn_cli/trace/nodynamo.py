"""Keep torch._dynamo out of a traced forward that is never compiled.

Some of PyTorch's Python kernels (the meta kernels of elementwise ops such as `aten.silu`, which
run on `--device meta`) are wrapped in `torch._disable_dynamo`, whose wrapper imports all of
Dynamo on its first call (about as long as importing torch itself) only to mark the function
as not to be compiled. Outside `torch.compile` that mark changes nothing, so while Dynamo is not
yet imported the wrappers are handed their answer for the duration of the run: the function
itself. Nothing is left changed afterwards; any PyTorch that lays its kernels out otherwise is
simply left alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["dynamo_left_out"]

# The attribute torch._compile._disable_dynamo's wrapper caches its answer in.
_CACHE = "__dynamo_disable"


@contextmanager
def dynamo_left_out() -> Iterator[None]:
    """Run the body without the meta kernels' wrappers importing Dynamo (if not yet imported)."""
    if "torch._dynamo" in sys.modules:
        yield
        return
    patched = [fn for fn in _wrapped_kernels() if not hasattr(fn, _CACHE)]
    for fn in patched:
        setattr(fn, _CACHE, fn)
    try:
        yield
    finally:
        for fn in patched:
            if getattr(fn, _CACHE, None) is fn:
                delattr(fn, _CACHE)


def _wrapped_kernels() -> list[Callable[..., Any]]:
    """The functions that the meta kernels' `_disable_dynamo` wrappers wrap."""
    try:
        from torch._compile import _disable_dynamo
        from torch._decomp import global_decomposition_table

        wrapper_code = _disable_dynamo(lambda: None).__code__
        slot = wrapper_code.co_freevars.index("fn")
    except (ImportError, AttributeError, ValueError):
        return []
    found: dict[int, Callable[..., Any]] = {}
    # The meta kernels are drawn from every decomposition table (refs such as aten.mul's too);
    # each is a short chain of wrappers, linked by __wrapped__ or by the closure's `fn`.
    todo = [kernel for table in global_decomposition_table.values() for kernel in list(table.values())]
    seen: set[int] = set()
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        code = getattr(fn, "__code__", None)
        if code is wrapper_code:
            inner = fn.__closure__[slot].cell_contents
            found[id(inner)] = inner
            todo.append(inner)
        elif code is not None and "fn" in code.co_freevars and fn.__closure__:
            todo.append(fn.__closure__[code.co_freevars.index("fn")].cell_contents)
        if callable(getattr(fn, "__wrapped__", None)):
            todo.append(fn.__wrapped__)
    return list(found.values())
