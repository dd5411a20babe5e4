"""A command's --help as a reader needs it at 80 columns: the names in one narrow column (a
flag's negative form under it, not in a column of its own), the description in the rest; flags
with no value type; the command's examples at the end.

Drawn with rich from click's public parameter attributes (opts, secondary_opts, help, default,
metavar) and Typer's help panels, through click's `Command.format_help`; a group (`ffn --help`)
adds its commands as a panel, each with the first paragraph of its own help.
"""

from __future__ import annotations

import inspect
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ffn_cli.cli.common import terminal_size
from ffn_cli.i18n import N_, _
from ffn_cli.render.fit import Wide

__all__ = ["help_messages", "print_help"]

_DEFAULT_PANEL = "Options"
_COMMANDS_PANEL = "Commands"


def _names(param: Any, ctx: Any) -> Text:
    """'--variant, -v <str>'; a flag pair on two lines, the negative form under the positive."""
    longs = [o for o in param.opts if o.startswith("--")]
    shorts = [o for o in param.opts if not o.startswith("--")]
    text = Text(", ".join(longs + shorts), style="bold cyan")
    value = _value_type(param, ctx)
    if value:
        text.append(" " + value, style="yellow")
    for negative in param.secondary_opts:
        text.append("\n" + negative, style="bold magenta")
    return text


def _value_type(param: Any, ctx: Any) -> str:
    if getattr(param, "is_flag", False):
        return ""
    if param.metavar is not None:
        return str(param.metavar)
    shown = getattr(param, "display_type_rich", None)
    return str(shown(ctx) or "") if shown is not None else param.make_metavar(ctx)


def _default(param: Any) -> str | None:
    if param.show_default is False or param.required:
        return None
    if isinstance(param.show_default, str):
        return param.show_default
    if getattr(param, "is_flag", False):
        if not param.secondary_opts or param.default is None:
            return None
        return (param.opts if param.default else param.secondary_opts)[0].lstrip("-")
    if param.default is None or callable(param.default):
        return None
    return str(param.default)


def _description(param: Any) -> Wide:
    text = Text.from_markup(_(inspect.cleandoc(param.help)) if param.help else "")
    default = _default(param)
    if default is not None:
        text.append((" " if text else "") + "[" + _("default: {value}").format(value=default) + "]", style="dim")
    return Wide(text)


def _panels(params: list[Any], ctx: Any) -> list[RenderableType]:
    groups: dict[str, list[Any]] = {}
    for param in params:
        if getattr(param, "hidden", False) or not getattr(param, "opts", None):
            continue
        groups.setdefault(getattr(param, "rich_help_panel", None) or _DEFAULT_PANEL, []).append(param)
    panels: list[RenderableType] = []
    for title, members in groups.items():
        table = Table.grid(padding=(0, 2), expand=True)
        table.add_column(no_wrap=True)
        table.add_column(ratio=1)
        for param in members:
            table.add_row(_names(param, ctx), _description(param))
        panels.append(Panel(table, title=_(title), title_align="left", border_style="dim"))
    return panels


def _paragraphs(text: str) -> list[str]:
    """A docstring's paragraphs, each one flowing line (the terminal wraps it)."""
    return [" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n")]


def _subcommands(command: Any, ctx: Any) -> list[tuple[str, str]]:
    """A group's commands and the first paragraph of each one's help; none for a command."""
    if not hasattr(command, "list_commands"):
        return []
    found = [(name, command.get_command(ctx, name)) for name in command.list_commands(ctx)]
    return [(name, _paragraphs(sub.help or "")[0]) for name, sub in found if sub is not None and not sub.hidden]


def _commands_panel(commands: list[tuple[str, str]]) -> RenderableType:
    table = Table.grid(padding=(0, 2), expand=True)
    table.add_column(no_wrap=True, style="bold cyan")
    table.add_column(ratio=1)
    for name, summary in commands:
        table.add_row(name, Wide(Text.from_markup(_(summary))) if summary else Text(""))
    return Panel(table, title=_(_COMMANDS_PANEL), title_align="left", border_style="dim")


# What click writes after a command's name in its usage line, said in the reader's language.
_USAGE_WORDS = {"[OPTIONS]": N_("[OPTIONS]"), "COMMAND [ARGS]...": N_("COMMAND [ARGS]..."), "[ARGS]...": N_("[ARGS]...")}


def help_messages(command: Any, ctx: Any) -> list[str]:
    """Every English text a command's --help shows, as the message ids `print_help` translates."""
    messages = [*_paragraphs(command.help or ""), _DEFAULT_PANEL, "Usage: ", "default: {value}"]
    if command.epilog:
        messages.append(command.epilog)
    if _subcommands(command, ctx):
        messages.append(_COMMANDS_PANEL)
    for param in command.get_params(ctx):
        if param.help:
            messages.append(inspect.cleandoc(param.help))
        if getattr(param, "rich_help_panel", None):
            messages.append(param.rich_help_panel)
    return [m for m in messages if m]


def print_help(command: Any, ctx: Any) -> None:
    """Usage, the command's text, its options panel by panel, then its examples."""
    usage = Text(_("Usage: "), style="yellow")
    pieces = [_(_USAGE_WORDS[p]) if p in _USAGE_WORDS else p for p in command.collect_usage_pieces(ctx)]
    usage.append(" ".join([ctx.command_path, *pieces]), style="bold")
    parts: list[RenderableType] = [Text(""), usage, Text("")]
    if command.help:
        parts += [Wide(Text.from_markup("\n\n".join(_(p) for p in _paragraphs(command.help)))), Text("")]
    parts += _panels(command.get_params(ctx), ctx)
    commands = _subcommands(command, ctx)
    if commands:
        parts.append(_commands_panel(commands))
    if command.epilog:
        parts += [Text(""), Wide(Text.from_markup(_(command.epilog)))]
    width, height = terminal_size()
    Console(highlight=False, width=width, height=height).print(Group(*parts))
