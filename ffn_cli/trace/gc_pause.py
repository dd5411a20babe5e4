"""Pause Python's cyclic garbage collector around a trace.

A trace makes millions of small objects that live to its end (an op record, its shapes and
dataflow per aten op; a module and its hooks per expert), and every collection rescans all of
them: with thousands of experts that is a sixth of the run. Reference counting still frees
every tensor the moment a plain forward would, so pausing changes no number the trace reports.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["gc_paused"]

P = ParamSpec("P")
R = TypeVar("R")


def gc_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """fn, run with the cyclic collector off (and back on after, if it was on)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        was_on = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_on:
                gc.enable()

    return run
