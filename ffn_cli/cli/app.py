"""The Typer app: root options (`--version`, `--debug`) and command registration."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ffn_cli import __version__
from ffn_cli.cli import bench_cmd, params_cmd, trace_cmd, variants_cmd
from ffn_cli.cli.ascii_output import use_ascii_fallback
from ffn_cli.cli.common import err_console, settings
from ffn_cli.cli.signals import Terminated, handle_termination
from ffn_cli.errors import USAGE_EXIT
from ffn_cli.render.literal import visible

__all__ = ["app", "main"]


def _click_class(name: str) -> type[Exception]:
    # Typer ≥ 0.20 vendors click (typer._click); older releases use click itself. Both are
    # reachable through the MRO of typer.BadParameter.
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


_ClickException = _click_class("ClickException")
_UsageError = _click_class("UsageError")


class OneLineErrors(TyperGroup):
    """Usage errors (a mistyped option, a non-integer size) as one line on stderr, exit 2."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
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
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ffn {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show Python tracebacks instead of one-line errors.")] = False,
) -> None:
    settings.debug = debug


app.command("trace")(trace_cmd.trace)
app.command("params")(params_cmd.params)
app.command("bench")(bench_cmd.bench)
app.command("variants")(variants_cmd.variants)


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
