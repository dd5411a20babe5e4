"""`ffn trace --page FILE.html`: the run drawn as a page, beside whatever the command prints.

The destination is checked before the run (as `--svg` / `--html` check theirs); the page is
drawn from the `--json` dict of the same run (its explanations included) and written whole."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ffn_cli.cli.common import err_console, json_ready
from ffn_cli.i18n import _

__all__ = ["PageOpt", "draw_page", "page_target", "save_page", "write_page"]

PageOpt = Annotated[
    str | None,
    typer.Option(
        "--page",
        help="Also draw the run as a page (FILE.html): the data flow to scale, hover a step for its numbers; offline, one file.",
        rich_help_panel="Save",
        metavar="FILE",
    ),
]


def page_target(page: str | None) -> Path | None:
    """The checked destination of --page, before any work."""
    if page is None:
        return None
    from ffn_cli.outputs import check_output_file

    return check_output_file("page", page, (".html", ".htm"))


def draw_page(result: Any, extra: dict[str, Any] | None = None, *, whole: bool = True) -> str:
    """`result` (a TraceResult) drawn from its --json dict (explanations included, and `extra`,
    the keys --json adds for a model): a whole page, or a notebook cell's fragment."""
    from ffn_cli.render.page import trace_fragment, trace_page
    from ffn_cli.render.trace import trace_data

    data = json_ready(trace_data(result, explain=True) | (extra or {}))
    return (trace_page if whole else trace_fragment)(result, data)


def save_page(target: Path | str, text: str) -> Path:
    """Write the page whole (a temp file renamed over `target`), and say so on stderr."""
    from ffn_cli.outputs import check_output_file, write_atomically

    path = check_output_file("page", str(target), (".html", ".htm"))
    write_atomically(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), option="page")
    err_console.print(_("wrote {file}").format(file=path), markup=False)
    return path


def write_page(target: Path | None, result: Any, extra: dict[str, Any] | None = None) -> None:
    """--page, once the run is done: nothing without it."""
    if target is not None:
        save_page(target, draw_page(result, extra))
