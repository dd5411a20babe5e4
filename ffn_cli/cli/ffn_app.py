"""The Typer app: root options (`--version`, `--debug`) and its commands, each built when run."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from ffn_cli import __version__
from ffn_cli.cli.ascii_output import can_show_chinese, use_ascii_fallback
from ffn_cli.cli.click_messages import translate_usage_error
from ffn_cli.cli.commands import COMMANDS, RICH_MARKUP, build_command, flags_take_no_value
from ffn_cli.cli.common import ERROR_PREFIX, console, err_console, fail, fit_consoles, settings
from ffn_cli.cli.signals import Terminated, handle_termination
from ffn_cli.errors import USAGE_EXIT
from ffn_cli.i18n import LANGUAGES, N_, _, language, language_from_environment, set_language
from ffn_cli.render.fit import Wide

__all__ = ["app", "main"]


class UsageProblem(typer.TyperException):
    """A usage error of ffn's own (`--lang`, `--version`), said as click's usage errors are
    (all of them `typer.TyperException`s): one line, exit 2; `option_name`, as click's
    NoSuchOption has it, is the option it is about (`--json` says it), None for FFN_LANG."""

    exit_code = USAGE_EXIT

    def __init__(self, message: str, ctx: Any = None, option_name: str | None = None) -> None:
        super().__init__(message)
        self.ctx = ctx
        self.option_name = option_name


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
                raise UsageProblem(_("--lang needs a value: {choices}").format(choices=", ".join(LANGUAGES)), option_name="--lang")
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
    """--lang, else FFN_LANG, else the locale; a language ffn does not speak is a usage error,
    said in the language the rest of the line would give (English where none does). Chinese on
    a stream that cannot encode it (PYTHONIOENCODING=ascii, an ASCII terminal) falls back to
    English, with a note on stderr."""
    try:
        set_language(chosen)
    except ValueError:
        source, value = ("--lang", chosen) if chosen is not None else ("FFN_LANG", os.environ.get("FFN_LANG", ""))
        _fall_back_language(ignoring="FFN_LANG" if chosen is None else None)
        raise UsageProblem(
            _("{source} {value}: must be one of {choices}").format(source=source, value=repr(value), choices=", ".join(LANGUAGES)),
            option_name="--lang" if chosen is not None else None,
        ) from None
    if language() != "en" and not can_show_chinese(sys.stdout, sys.stderr):
        set_language("en")  # the note in English: this stream shows no Chinese
        encoding = next(getattr(s, "encoding", None) for s in (sys.stdout, sys.stderr) if not can_show_chinese(s))
        err_console.print(f"note: the output's encoding ({encoding}) cannot show Chinese; ffn speaks English here", markup=False)


def _fall_back_language(ignoring: str | None) -> None:
    """The language of the environment without the variable that failed; English if none."""
    try:
        env = {k: v for k, v in os.environ.items() if k != ignoring}
        set_language(language_from_environment(env))
    except ValueError:
        set_language("en")
    if language() != "en" and not can_show_chinese(sys.stdout, sys.stderr):
        set_language("en")


def _click_option(exc: Exception) -> str | None:
    """The option a click usage error is about, as typed: an unknown one's name, or the
    parameter whose value failed."""
    name = getattr(exc, "option_name", None)
    if name:
        return str(name)
    param = getattr(exc, "param", None)
    opts = getattr(param, "opts", None)
    return max(opts, key=len) if opts else None


def _pop_debug(args: list[str]) -> tuple[list[str], bool]:
    """`--debug` may come anywhere before a `--`; FFN_DEBUG=1 sets it too."""
    end = args.index("--") if "--" in args else len(args)
    found = "--debug" in args[:end]
    kept = [a for i, a in enumerate(args) if not (a == "--debug" and i < end)]
    return kept, found or os.environ.get("FFN_DEBUG", "") not in ("", "0")


class OneLineErrors(TyperGroup):
    """Usage errors (a mistyped option, a non-integer size) as one line on stderr, exit 2.
    Each subcommand is built when first asked for (cli/commands.py)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        if cmd_name not in self.commands:
            self.commands[cmd_name] = build_command(cmd_name)
        return self.commands[cmd_name]

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        if "--version" in args[:end] and len(args) > 1:  # a flag takes no value, and --version nothing else
            others = " ".join(a for a in args if a != "--version")
            raise UsageProblem(_("--version takes no value and no command (got {others})").format(others=others), ctx, "--version")
        return super().parse_args(ctx, args)

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        flags_take_no_value(params)
        return params

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """`ffn --help` drawn as each command's is (cli/help_format.py), in the chosen language."""
        from ffn_cli.cli.help_format import print_help

        print_help(self, ctx)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **kwargs: Any,
    ) -> Any:
        argv, settings.debug = _pop_debug(list(sys.argv[1:] if args is None else args))
        settings.json = "--json" in (argv[: argv.index("--")] if "--" in argv else argv)
        fit_consoles()
        try:
            argv, chosen = _pop_lang(argv)
            _choose_language(chosen)
            result = super().main(argv, prog_name, complete_var, False, windows_expand_args, **kwargs)
        except typer.TyperException as exc:  # click's usage errors, and ffn's own
            if not standalone_mode:
                raise
            message = translate_usage_error(" ".join(exc.format_message().split()))
            message += _split_call_hint(argv, exc)
            ctx = getattr(exc, "ctx", None)  # a usage error's; not every TyperException has one
            command = f"ffn {ctx.info_name} --help" if ctx and ctx.parent else "ffn --help"
            fail(_("{message} (see `{command}`)").format(message=message, command=command), USAGE_EXIT, _click_option(exc))
            sys.exit(USAGE_EXIT)
        except typer.Abort:
            if not standalone_mode:
                raise
            fail(_("aborted"), 1)
            sys.exit(1)
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) else 0)


def _split_call_hint(argv: list[str], exc: Exception) -> str:
    """An unquoted `--module f.py:Cls(512, 2048)` reaches ffn in two words, the second an extra
    argument: say to quote it, as it was meant."""
    if getattr(exc, "exit_code", None) != USAGE_EXIT or "--module" not in argv[:-1] or "extra argument" not in str(exc):
        return ""
    value = argv[argv.index("--module") + 1]
    if value.count("(") <= value.count(")"):
        return ""
    rest = argv[argv.index("--module") + 2 :]
    closing = next((i for i, word in enumerate(rest) if ")" in word), None)
    whole = " ".join([value, *rest[: closing + 1]]) if closing is not None else value
    return _("; the shell split --module's value at its spaces: quote it, --module '{whole}'").format(whole=whole)


app = typer.Typer(
    cls=OneLineErrors,
    name="ffn",
    help="See what a Transformer's feed-forward network does: shapes, parameters, FLOPs, speed.",
    invoke_without_command=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=RICH_MARKUP,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ffn {__version__}")
        raise typer.Exit()


TRY = N_("""Try:
  ffn trace                       the classic FFN, step by step: shapes, FLOPs
  ffn params -v relu,swiglu,moe   parameters and FLOPs of variants side by side
  ffn params --preset llama-2-7b  a whole model's parameters and memory
  ffn bench -v relu,swiglu        how fast each runs here
  ffn variants                    every variant, its formula and origin
  ffn --install-completion        tab completion for your shell""")


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
        ctx.get_help()  # drawn on stdout by print_help
        _print_try()
        raise typer.Exit(0)


def _print_try() -> None:
    """The examples under bare `ffn`: each command whole on its line, its words wrapping beside it."""
    heading, *examples = _(TRY).split("\n")
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for example in examples:
        command, words = re.split(r"\s{2,}", example.strip(), maxsplit=1)
        grid.add_row(Text(command), Wide(Text(words)))
    fit_consoles()
    console.print()
    console.print(Text(heading))
    console.print(Padding(grid, (0, 0, 0, 2)))


def main() -> None:
    """`ffn` as a process runs it (through `ffn_cli.cli.main`): the process ends when this
    returns or raises."""
    if sys.stdout is None:  # started with stdout closed (`ffn … >&-`): results would vanish
        message = _("standard output is closed; ffn prints its results there")
        err_console.print(ERROR_PREFIX + message, markup=False)
        sys.exit(USAGE_EXIT)
    use_ascii_fallback()
    handle_termination()
    try:
        app()
    except Terminated as exc:  # every `finally` has run: ranks stopped, temp files gone
        sys.exit(exc.exit_code)
