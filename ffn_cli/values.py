"""What counts as a number in a value ffn did not make (a JSON file's, a Python API argument):
an int or a float, finite, never a bool (True is an int to Python, not a size to ffn)."""

from __future__ import annotations

import math
from typing import TypeGuard

__all__ = ["is_finite_number"]


def is_finite_number(value: object) -> TypeGuard[int | float]:
    """True for an int or a float that is finite; False for a bool, NaN, ±inf and anything else."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
