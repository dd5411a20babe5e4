"""`ffn trace --page FILE.html`: the run drawn as a page, beside whatever the command prints.

The destination is checked before the run (as `--svg` / `--html` check theirs); the page is
drawn from the `--json` dict of the same run (its explanations included) and written whole."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ffn_cli.cli.common import err_console, json_ready
from ffn_cli.i18n import _

__all__ = ["PageOpt", "page_target", "write_page"]

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


def write_page(target: Path | None, result: Any, extra: dict[str, Any] | None = None) -> None:
    """Draw `result` (a TraceResult) and write it to `target`; `extra`: keys --json adds (a model's)."""
    if target is None:
        return
    from ffn_cli.outputs import write_atomically
    from ffn_cli.render.page import trace_page
    from ffn_cli.render.trace import trace_data

    text = trace_page(result, json_ready(trace_data(result, explain=True) | (extra or {})))
    write_atomically(target, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), option="page")
    err_console.print(_("wrote {file}").format(file=target), markup=False)
