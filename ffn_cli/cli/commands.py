"""The subcommands, each imported and built into its click command when first asked for.

Typer builds the click command of every registered command (each option's parameter object,
from the function's signature) before parsing a single argument; `ffn params` would import and
build `trace` and `bench`, with their fifty options, only to run itself. The group here follows
click's documented pattern for lazily loaded subcommands (`list_commands` names them all,
`get_command` builds one): running one command builds that command alone, while `ffn --help`
and shell completion, which list them all, build them all.
"""

from __future__ import annotations

import importlib
from typing import Any, Final

import typer
from typer.core import TyperCommand

from ffn_cli.cli.common import running
from ffn_cli.cli.export import with_export

__all__ = ["COMMANDS", "RICH_MARKUP", "FFNCommand", "build_command", "flags_take_no_value"]

# In the order `ffn --help` lists them; each is the function of that name in ffn_cli/cli/NAME_cmd.py.
COMMANDS = ("trace", "params", "bench", "variants", "hardware")
RICH_MARKUP: Final = "rich"  # the app's and every command's markup mode, as `ffn --help` draws it


def flags_take_no_value(params: Any) -> None:
    """A flag (--json, --help, --bias/--no-bias) is shown in the help with no value type: an
    empty metavar is what the help prints in the type column."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


class FFNCommand(TyperCommand):
    """A Typer command whose flags show no value type in the help, whose help is drawn by
    cli/help_format.py, and whose context is `current_context()` while it runs."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from ffn_cli.cli.help_format import print_help

        print_help(self, ctx)

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        flags_take_no_value(params)
        return params

    def invoke(self, ctx: Any) -> Any:
        with running(ctx):
            return super().invoke(ctx)


def build_command(name: str) -> Any:
    """The click command of `ffn NAME`, built by Typer's public `typer.main.get_command` from an
    app that holds that command alone."""
    module = importlib.import_module(f"ffn_cli.cli.{name}_cmd")
    single = typer.Typer(rich_markup_mode=RICH_MARKUP, add_completion=False, pretty_exceptions_enable=False)
    single.command(name, cls=FFNCommand, epilog=getattr(module, "EXAMPLES", None))(with_export(name, getattr(module, name)))
    command = typer.main.get_command(single)
    command.name = name
    return command
