"""A run's options as a typed view of the request that asked for them: the fields of the run's
own options class (tracing's RunOptions, the benchmark's BenchConfig) read off the request by
name, never copied out by hand, so an option is declared once, on the request."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

__all__ = ["options_view"]

T = TypeVar("T")


def options_view(options_class: type[T], request: object, **worked_out: Any) -> T:
    """`options_class` made from `request`'s attributes of its fields' names, `worked_out` (what
    the service found: a model's dtype, the GPU's key) over them. A field the request lacks is
    an AttributeError here, at once, not an option silently left at its default."""
    names = [f.name for f in fields(options_class) if f.init and f.name not in worked_out]  # type: ignore[arg-type]
    return options_class(**{name: getattr(request, name) for name in names}, **worked_out)
