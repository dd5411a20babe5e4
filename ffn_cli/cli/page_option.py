"""`ffn trace --page FILE.html`: the run drawn as a page, beside whatever the command prints.

The destination is checked before the run (as `--svg` / `--html` check theirs); the page is
drawn from the `--json` dict of the same run (its explanations included) and written whole."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ffn_cli.cli.common import err_console
from ffn_cli.i18n import _

__all__ = ["PageOpt", "save_page"]

PageOpt = Annotated[
    str | None,
    typer.Option(
        "--page",
        help="Also draw the run as a page (FILE.html): the data flow to scale, hover a step for its numbers; offline, one file.",
        rich_help_panel="Save",
        metavar="FILE",
    ),
]


def save_page(target: Path | str, text: str) -> Path:
    """Write the page whole (a temp file renamed over `target`), and say so on stderr."""
    from ffn_cli.outputs import check_output_file, write_atomically

    path = check_output_file("page", str(target), (".html", ".htm"))
    write_atomically(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), option="page")
    err_console.print(_("wrote {file}").format(file=path), markup=False)
    return path
