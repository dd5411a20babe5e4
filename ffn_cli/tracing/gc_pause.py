"""Pause Python's cyclic garbage collector while a forward is recorded and grouped.

A recording makes millions of small objects that live to its end (an op record, its shapes and
dataflow per aten op; a call record per module), and every collection rescans all of them:
with thousands of experts that is a sixth of the run. Reference counting still frees each
tensor the moment a plain forward would, so the recording's numbers do not change. (Not around
`--backward`: its peak memory counts what is alive, and garbage in a reference cycle is alive
until a collection frees it.)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off for the block (and back on after, if it was on)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
