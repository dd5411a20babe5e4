"""One presenter per result type (services/results.py): the result's view (what the command
prints) and its data (what `--json` prints, and the API's `to_dict()`), each made only when asked.
The CLI commands and `ffn_cli.*` call the same `present(result)` of their command's module."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

__all__ = ["Presented", "stacked"]


@dataclass(frozen=True, eq=False)
class Presented:
    """A result as shown: its view and its data, made when called; a trace's picture too
    (`drawing(True)`: the whole page, `drawing(False)`: a notebook cell's fragment)."""

    view: Callable[[], RenderableType]
    data: Callable[[], Any]  # a dict, or a list (the presets)
    drawing: Callable[[bool], str] | None = None


def stacked(*parts: RenderableType | None) -> Group:
    """The tables one under another, a blank line between (what the command prints)."""
    shown_parts = [p for p in parts if p is not None]
    return Group(*[piece for i, p in enumerate(shown_parts) for piece in ([Text(""), p] if i else [p])])
