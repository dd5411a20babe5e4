"""What every `--json` passes through: plain JSON types, and floats that JSON can hold (the
objects themselves are made by the presenters, render/presenters/)."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["finite_floats", "json_default", "json_ready"]


def json_ready(data: Any) -> Any:
    """`data` exactly as `--json` prints it, read back: plain dicts, lists, numbers, None."""

    return json.loads(json.dumps(finite_floats(data), default=json_default, allow_nan=False))


def finite_floats(value: Any) -> Any:
    """NaN and ±Inf, which JSON cannot hold (Python would write bare NaN / Infinity), as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_floats(v) for v in value]
    return value


def json_default(value: Any) -> Any:
    """What json.dumps cannot write itself: tuples as lists, NumPy and torch scalars as numbers."""
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "item"):  # numpy and torch scalars
        return finite_floats(value.item())
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
