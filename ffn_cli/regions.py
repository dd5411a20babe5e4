"""Named regions of a forward: a variant's forward runs each step inside `region(name)`, and
the trace recorder reads `current()` to label every op it sees, whatever order they ran in.

Pure Python and tiny, so the recorder and the modules share it without importing each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["current", "region"]

_stack: list[str] = []


@contextmanager
def region(name: str) -> Iterator[None]:
    _stack.append(name)
    try:
        yield
    finally:
        _stack.pop()


def current() -> str | None:
    """The innermost region the running code is in, or None."""
    return _stack[-1] if _stack else None
