"""The Typer app: root options (`--version`, `--debug`) and its commands, each built when run."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ffn_cli import __version__
from ffn_cli.cli.ascii_output import use_ascii_fallback
from ffn_cli.cli.commands import COMMANDS, LazyCommands, build_command, flags_take_no_value
from ffn_cli.cli.common import err_console, settings
from ffn_cli.cli.signals import Terminated, handle_termination
from ffn_cli.errors import USAGE_EXIT
from ffn_cli.i18n import LANGUAGES, _, set_language
from ffn_cli.render.literal import visible

__all__ = ["app", "main"]


def _click_class(name: str) -> type[Exception]:
    # Typer ≥ 0.20 vendors click (typer._click); older releases use click itself. Both are
    # reachable through the MRO of typer.BadParameter.
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


_ClickException = _click_class("ClickException")
_UsageError = _click_class("UsageError")


def _pop_lang(args: list[str]) -> tuple[list[str], str | None]:
    """`--lang zh` / `--lang=zh` may come anywhere before a `--`, as `--debug` may; the last wins."""
    end = args.index("--") if "--" in args else len(args)
    kept: list[str] = []
    chosen: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if i < end and arg == "--lang":
            if i + 1 >= end:
                raise _UsageError(_("--lang needs a value: {choices}").format(choices=", ".join(LANGUAGES)))
            chosen = args[i + 1]
            i += 2
            continue
        if i < end and arg.startswith("--lang="):
            chosen = arg.split("=", 1)[1]
        else:
            kept.append(arg)
        i += 1
    return kept, chosen


def _choose_language(chosen: str | None) -> None:
    """--lang, else FFN_LANG, else the locale; a language ffn does not speak is a usage error."""
    try:
        set_language(chosen)
    except ValueError as exc:
        set_language("en")
        raise _UsageError(str(exc)) from None


def _pop_debug(args: list[str]) -> tuple[list[str], bool]:
    """`--debug` may come anywhere before a `--`; FFN_DEBUG=1 sets it too."""
    end = args.index("--") if "--" in args else len(args)
    found = "--debug" in args[:end]
    kept = [a for i, a in enumerate(args) if not (a == "--debug" and i < end)]
    return kept, found or os.environ.get("FFN_DEBUG", "") not in ("", "0")


class OneLineErrors(TyperGroup):
    """Usage errors (a mistyped option, a non-integer size) as one line on stderr, exit 2.
    Each subcommand is built when first asked for (cli/commands.py)."""

    def __init__(self, *args: Any, commands: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(COMMANDS, lambda name: build_command(name, app), built=commands)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        if "--version" in args[:end] and len(args) > 1:  # a flag takes no value, and --version nothing else
            others = " ".join(a for a in args if a != "--version")
            raise _UsageError(f"--version takes no value and no command (got {others})", ctx=ctx)
        return super().parse_args(ctx, args)

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        flags_take_no_value(params)
        return params

    def main(self, args: Sequence[str] | None = None, *rest: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        argv, settings.debug = _pop_debug(list(sys.argv[1:] if args is None else args))
        try:
            argv, chosen = _pop_lang(argv)
            _choose_language(chosen)
            result = super().main(argv, *rest, standalone_mode=False, **kwargs)
        except _ClickException as exc:
            if not standalone_mode:
                raise
            message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
            command = f"ffn {exc.ctx.info_name} --help" if getattr(exc, "ctx", None) and exc.ctx.parent else "ffn --help"  # type: ignore[attr-defined]
            err_console.print(f"error: {visible(message)} (see `{command}`)", markup=False)
            sys.exit(USAGE_EXIT)
        except typer.Abort:
            if not standalone_mode:
                raise
            err_console.print("error: aborted", markup=False)
            sys.exit(1)
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) else 0)


app = typer.Typer(
    cls=OneLineErrors,
    name="ffn",
    help="See what a Transformer's feed-forward network does: shapes, parameters, FLOPs, speed.",
    invoke_without_command=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ffn {__version__}")
        raise typer.Exit()


TRY = """Try:
  ffn trace                       the classic FFN, step by step: shapes, FLOPs
  ffn params -v relu,swiglu,moe   parameters and FLOPs of variants side by side
  ffn params --preset llama-2-7b  a whole model's parameters and memory
  ffn bench -v relu,swiglu        how fast each runs here
  ffn variants                    every variant, its formula and origin
  ffn --install-completion        tab completion for your shell"""


@app.callback()
def root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show Python tracebacks instead of one-line errors (anywhere on the line; or FFN_DEBUG=1).")
    ] = False,
    lang: Annotated[
        str | None,
        typer.Option(
            "--lang",
            metavar="en|zh",
            help="The language of the output: en or zh (anywhere on the line; or FFN_LANG; else the locale, as gettext reads it).",
        ),
    ] = None,
) -> None:
    settings.debug = settings.debug or debug
    if ctx.invoked_subcommand is None:  # bare `ffn`: the help, and where to start
        typer.echo(ctx.get_help())
        typer.echo(TRY)
        raise typer.Exit(0)


def main() -> None:
    if sys.stdout is None:  # started with stdout closed (`ffn … >&-`): results would vanish
        err_console.print("error: standard output is closed; ffn prints its results there", markup=False)
        sys.exit(USAGE_EXIT)
    use_ascii_fallback()
    handle_termination()
    try:
        app()
    except Terminated as exc:  # every `finally` has run: ranks stopped, temp files gone
        sys.exit(exc.exit_code)
