"""What a service answers: the result itself, its view (what the command prints) and its data
(what `--json` prints), made only when asked: the CLI shows one of them, the API either."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import RenderableType

__all__ = ["Answer"]


@dataclass(frozen=True, eq=False)
class Answer:
    """One service's answer: its value, and how it is shown and written."""

    value: Any
    view: Callable[[], RenderableType]
    data: Callable[[], Any]  # a dict, or a list (the presets)
    # False on a rank that is not the first under torchrun: the first one prints for all.
    shown: bool = True
    # A trace's picture: the whole page (True) or a notebook cell's fragment (False).
    drawing: Callable[[bool], str] | None = None
    # What went wrong once the answer was made (a failed --check): raised after it is shown.
    failure: Exception | None = None
