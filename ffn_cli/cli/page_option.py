"""`ffn trace --page FILE.html`: the run drawn as a page, beside whatever the command prints.

The destination is checked before the run with the command's other files (cli/files.py); the
page is drawn from the `--json` dict of the same run (its explanations included) and written by
ffn_cli/outputs.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ffn_cli.cli.common import err_console
from ffn_cli.i18n import _
from ffn_cli.outputs import HTML_FILES, check_output_file, write_text

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
    """Write the page as ffn_cli/outputs.py writes every file, and say so on stderr."""
    path = write_text(check_output_file("page", str(target), HTML_FILES), text, option="page")
    err_console.print(_("wrote {file}").format(file=path), markup=False)
    return path
