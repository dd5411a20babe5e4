"""`--svg FILE` / `--html FILE` on every command: save exactly what the command printed.

The console records while the command runs; rich exports the record as an SVG picture or an
HTML page, written atomically. The destination is checked before any work starts.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from ffn_cli.cli.common import console, described, err_console, fail
from ffn_cli.errors import USAGE_EXIT, FFNError, FFNRuntimeError
from ffn_cli.i18n import _

__all__ = ["HtmlOpt", "SvgOpt", "with_export"]

_SAVE = "Save"
SvgOpt = Annotated[
    str | None, typer.Option("--svg", help="Also save what is printed as an SVG picture (FILE.svg).", rich_help_panel=_SAVE, metavar="FILE")
]
HtmlOpt = Annotated[
    str | None, typer.Option("--html", help="Also save what is printed as an HTML page (FILE.html).", rich_help_panel=_SAVE, metavar="FILE")
]

F = TypeVar("F", bound=Callable[..., Any])


def _targets(svg: str | None, html: str | None, plain: str | None) -> dict[str, Path]:
    """The checked destinations; `plain` names an option given that prints without tables."""
    if svg is None and html is None:
        return {}  # nothing to save: the file checks never load
    from ffn_cli.outputs import check_output_file

    targets = {}
    if svg is not None:
        targets["svg"] = check_output_file("svg", svg, (".svg",))
    if html is not None:
        targets["html"] = check_output_file("html", html, (".html", ".htm"))
    if targets and plain:
        option = "--svg" if svg is not None else "--html"
        raise FFNError(
            plain,
            True,
            _("{option} saves the tables as printed; drop --{plain} (or redirect the output to a file)").format(option=option, plain=plain),
        )
    return targets


def _save(targets: dict[str, Path], title: str) -> None:
    from ffn_cli.outputs import write_atomically

    if not console.export_text(clear=False).strip():
        return  # this process printed nothing (a torchrun rank other than 0): rank 0 writes the file

    svg = console.export_svg(title=title, clear=False) if "svg" in targets else None
    html = console.export_html(clear=False) if "html" in targets else None
    for kind, text in (("svg", svg), ("html", html)):
        if text is not None:
            write_atomically(targets[kind], lambda tmp, text=text: Path(tmp).write_text(text, encoding="utf-8"), option=kind)
            err_console.print(_("wrote {file}").format(file=targets[kind]), markup=False)


def with_export(name: str, command: F) -> F:
    """The command with `--svg` and `--html` added to its options."""
    signature = inspect.signature(command, eval_str=True)
    extra = [
        inspect.Parameter("svg", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=SvgOpt),
        inspect.Parameter("html", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=HtmlOpt),
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, svg: str | None = None, html: str | None = None, **kwargs: Any) -> Any:
        try:
            plain = next((name for name in ("json", "markdown") if kwargs.get(name)), None)
            targets = _targets(svg, html, plain)
        except FFNError as exc:
            message, option = described(exc)
            raise fail(message, USAGE_EXIT, option) from None
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

    wrapper.__signature__ = signature.replace(parameters=[*signature.parameters.values(), *extra])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**command.__annotations__, "svg": SvgOpt, "html": HtmlOpt}
    return wrapper  # type: ignore[return-value]
