"""`--svg FILE` / `--html FILE` on every command: save exactly what the command printed.

The console records while the command runs; rich exports the record as an SVG picture or an
HTML page, written by ffn_cli/outputs.py. Before any work starts, every output the command was
given (these two, --page, --plot, the profile of --measure) is checked, as cli/files.py declares.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ffn_cli.cli.common import console, described, err_console, fail
from ffn_cli.cli.files import check_command_files
from ffn_cli.errors import USAGE_EXIT, FFNError, FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.outputs import write_text

__all__ = ["HtmlOpt", "SvgOpt", "with_export"]

_SAVE = "Save"
SvgOpt = Annotated[
    str | None, typer.Option("--svg", help="Also save what is printed as an SVG picture (FILE.svg).", rich_help_panel=_SAVE, metavar="FILE")
]
HtmlOpt = Annotated[
    str | None, typer.Option("--html", help="Also save what is printed as an HTML page (FILE.html).", rich_help_panel=_SAVE, metavar="FILE")
]


def _targets(command: str, values: dict[str, Any], plain: str | None) -> dict[str, Path]:
    """Every output of the command checked (cli/files.py), and those of --svg / --html; `plain`
    names an option given that prints without tables."""
    outputs = check_command_files(command, values)
    targets: dict[str, Path] = {kind: outputs[kind] for kind in ("svg", "html") if kind in outputs}
    if targets and plain:
        option = "--svg" if "svg" in targets else "--html"
        raise FFNError(
            plain,
            True,
            _("{option} saves the tables as printed; drop --{plain} (or redirect the output to a file)").format(option=option, plain=plain),
        )
    return targets


def _save(targets: dict[str, Path], title: str) -> None:
    if not console.export_text(clear=False).strip():
        return  # this process printed nothing (a torchrun rank other than 0): rank 0 writes the file

    svg = console.export_svg(title=title, clear=False) if "svg" in targets else None
    html = console.export_html(clear=False) if "html" in targets else None
    for kind, text in (("svg", svg), ("html", html)):
        if text is not None:
            write_text(targets[kind], text, option=kind)
            err_console.print(_("wrote {file}").format(file=targets[kind]), markup=False)


def with_export(name: str, command: Callable[..., Any]) -> Callable[..., Any]:
    """The command with `--svg` and `--html` added to its options (so a signature of its own)."""
    signature = inspect.signature(command, eval_str=True)
    extra = [
        inspect.Parameter("svg", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=SvgOpt),
        inspect.Parameter("html", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=HtmlOpt),
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, svg: str | None = None, html: str | None = None, **kwargs: Any) -> Any:
        try:
            plain = next((flag for flag in ("json", "markdown") if kwargs.get(flag)), None)
            targets = _targets(name, {**kwargs, "svg": svg, "html": html}, plain)
        except FFNError as exc:
            message, option = described(exc)
            raise fail(message, USAGE_EXIT, option) from None
        except FFNRuntimeError as exc:  # a place no file can be made (the profile's folder)
            raise fail(str(exc), exc.exit_code) from None
        if not targets:
            return command(*args, **kwargs)
        console.record = True
        console.export_text(clear=True)  # drop anything recorded before this command
        try:
            result = command(*args, **kwargs)
            _save(targets, f"ffn {name}")
        except FFNRuntimeError as exc:  # the write itself failed: a full disk, the folder gone
            raise fail(str(exc), exc.exit_code) from None
        finally:
            console.export_text(clear=True)
            console.record = False
        return result

    # What Typer reads (through inspect.signature); typeshed gives functions no such attribute.
    wrapper.__signature__ = signature.replace(parameters=[*signature.parameters.values(), *extra])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**command.__annotations__, "svg": SvgOpt, "html": HtmlOpt}
    return wrapper
