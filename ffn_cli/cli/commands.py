"""The subcommands, each imported and built into its click command when first asked for.

Typer builds the click command of every registered command (each option's parameter object,
from the function's signature) before parsing a single argument; `ffn params` would import and
build `trace` and `bench`, with their fifty options, only to run itself. Here the group holds a
mapping that knows every name up front and builds a command on first access: running one
command builds that command alone, while `ffn --help` and shell completion, which list them
all, build them all, exactly as Typer would have.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import typer
from typer.core import TyperCommand

from ffn_cli.cli.export import with_export

__all__ = ["COMMANDS", "LazyCommands", "build_command"]

# In the order `ffn --help` lists them; each is the function of that name in ffn_cli/cli/NAME_cmd.py.
COMMANDS = ("trace", "params", "bench", "variants", "hardware")


def flags_take_no_value(params: Any) -> None:
    """A flag (--json, --help, --bias/--no-bias) is shown in the help with no value type: an
    empty metavar is what the help prints in the type column."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


class FFNCommand(TyperCommand):
    """A Typer command whose flags show no value type in the help, and whose help is drawn by
    cli/help_format.py."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from ffn_cli.cli.help_format import print_help

        print_help(self, ctx)

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        flags_take_no_value(params)
        return params


def build_command(name: str, app: typer.Typer) -> Any:
    """The click command of `ffn NAME`, as Typer builds it for a command registered on `app`."""
    module = importlib.import_module(f"ffn_cli.cli.{name}_cmd")
    registrar = typer.Typer()  # registered as app.command(name) would be: the same defaults
    registrar.command(name, cls=FFNCommand, epilog=getattr(module, "EXAMPLES", None))(with_export(name, getattr(module, name)))
    return typer.main.get_command_from_info(
        registrar.registered_commands[0],
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
    )


class LazyCommands(MutableMapping[str, Any]):
    """name → click command, built by `build(name)` on first access; iterates in order."""

    def __init__(self, names: tuple[str, ...], build: Callable[[str], Any], built: dict[str, Any] | None = None) -> None:
        self._build = build
        self._commands: dict[str, Any] = dict.fromkeys(names)
        self._commands.update(built or {})

    def __getitem__(self, name: str) -> Any:
        command = self._commands[name]  # KeyError for a name that is no command
        if command is None:
            command = self._commands[name] = self._build(name)
        return command

    def __setitem__(self, name: str, command: Any) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)
