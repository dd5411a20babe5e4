"""A transient progress line on stderr, for the commands that wait on a core (bench's sweep,
hardware's --measure). auto_refresh is off, so no refresh thread exists: it redraws only when
the core reports a step, and the core never reports while timing."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ffn_cli.cli.common import err_console

__all__ = ["ProgressReport", "with_progress"]

ProgressReport = Callable[[int, int, str], None]  # (done, total, what): a step reported
T = TypeVar("T")


def with_progress(work: Callable[[ProgressReport | None], T], starting: str) -> T:
    """`work(on_progress)` with the line drawn on a terminal's stderr; `work(None)` where nobody
    would see it (a pipe, a log, a test)."""
    if not err_console.is_terminal:
        return work(None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # only a terminal draws it

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, auto_refresh=False) as progress:
        task = progress.add_task(starting, total=None)

        def on_progress(done: int, total: int, what: str) -> None:
            progress.update(task, completed=done, total=total, description=what)
            progress.refresh()

        return work(on_progress)
