"""Named regions of a forward: a variant's forward runs each step inside `region(name)`, and
the trace recorder reads `current()` to label every op it sees, whatever order they ran in.
Each module this package builds declares how the trace names its steps (`NamedSteps`).

Pure Python and tiny, so the recorder and the modules share it without importing each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import ClassVar

__all__ = ["NamedSteps", "StepNaming", "current", "region"]


class StepNaming(Enum):
    """How the trace names the steps of a module this package built."""

    # Each op by the region of the forward it ran in, each child call by its name, each with
    # the module's `step_formula` (attention).
    REGIONS = "regions"
    # The same in its variant's words and step order, a mixture's experts as sub-steps (an FFN).
    VARIANT = "variant"
    # Its attention's and FFN's steps, each in its part, its norms, and the residual adds.
    BLOCK = "block"


class NamedSteps:
    """A module of this package, which says how the trace names its steps: the trace asks the
    module, not its class, and groups any other module by its structure."""

    step_naming: ClassVar[StepNaming]


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
