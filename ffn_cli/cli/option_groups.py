"""Option groups: a frozen dataclass whose fields are command-line options, declared once and
given to every command that takes it.

A command names the group as one parameter (`ffn: FFNOptions`); `with_option_groups` replaces
that parameter, in the signature Typer reads, by one option per field, and on each call hands
the command one instance built from what click parsed, with `given` naming the options that
were typed (not left at their defaults).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

import typer

__all__ = ["request_fields", "typed_options", "with_option_groups"]


# The field every group carries beside its options: which of them the user typed.
GIVEN = "given"
_CONTEXT = "option_groups_context"  # the parameter added for a command that takes no context of its own


def _is_group(annotation: Any) -> bool:
    return isinstance(annotation, type) and is_dataclass(annotation) and GIVEN in {f.name for f in fields(annotation)}


def _options(group: type) -> list[inspect.Parameter]:
    """One keyword parameter per option field, with its Annotated declaration and default."""
    hints = typing.get_type_hints(group, include_extras=True)
    return [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name])
        for f in fields(group)
        if f.name != GIVEN
    ]


def typed_options(ctx: typer.Context, names: list[str]) -> frozenset[str]:
    """The names among `names` whose value came from the command line or the environment, as
    the command's context `ctx` says."""
    sources = {name: getattr(ctx.get_parameter_source(name), "name", "DEFAULT") for name in names}
    return frozenset(name for name, source in sources.items() if source not in ("DEFAULT", "DEFAULT_MAP"))


def request_fields(request: type, *groups: type) -> list[str]:
    """The fields a request dataclass is made with, each an option of the command by the same
    name, less the options of its `groups` (they reach the request whole, as one field)."""
    grouped = {f.name for group in groups for f in fields(group)}
    return [f.name for f in fields(request) if f.init and f.name not in grouped]


def with_option_groups(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command with each group parameter expanded into the group's options (so a signature of its own)."""
    signature = inspect.signature(command, eval_str=True)
    # The context, as Typer hands it to a parameter annotated typer.Context: the command's own, or one added for the groups.
    context = next((p.name for p in signature.parameters.values() if p.annotation is typer.Context), None)
    parameters: list[inspect.Parameter] = []
    if context is None:
        parameters.append(inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context))
    groups: dict[str, tuple[type, list[str]]] = {}
    for parameter in signature.parameters.values():
        if _is_group(parameter.annotation):
            options = _options(parameter.annotation)
            groups[parameter.name] = (parameter.annotation, [p.name for p in options])
            parameters += options
        else:  # keyword-only, as the group's options are, so the signature stays in a valid order
            parameters.append(
                parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY) if parameter.default is not parameter.empty else parameter
            )

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = kwargs[context] if context is not None else kwargs.pop(_CONTEXT)
        for name, (group, names) in groups.items():
            values = {option: kwargs.pop(option) for option in names if option in kwargs}
            kwargs[name] = group(**values, **{GIVEN: typed_options(ctx, names)})
        return command(*args, **kwargs)

    # What Typer reads (through inspect.signature); typeshed gives functions no such attribute.
    wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper
