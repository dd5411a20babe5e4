"""Option values that need no converting, converted without pydantic.

Typer (0.2x and later) converts every option value through a pydantic `TypeAdapter`, built on
the first value each option sees, defaults included: importing pydantic and building the
adapters costs a torch-free command such as `ffn params` as much as everything else it does.
Our options are plain `str`, `int`, `float` and `bool` without constraints, and most values
are already of their type (the defaults) or a decimal number typed on the command line: for
those the answer is known (the value itself, `int(text)`, `float(text)`), the same as pydantic
gives (`tests/test_cli_coercion.py` holds them against Typer's own adapters). Any other value,
any other option, goes to Typer's own conversion, built then. Typer releases without adapters
are left alone.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["convert_plainly"]

_INT = re.compile(r"-?[0-9]{1,18}")  # within 64 bits: no underscores, signs or spaces to interpret
_FLOAT = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,15})?")
_NOT_PLAIN = object()


def plain_value(annotation: Any, value: Any) -> Any:
    """The converted value where the conversion is the identity or a decimal number's; else
    _NOT_PLAIN."""
    if type(value) is annotation and annotation in (str, int, float, bool):
        return value
    if type(value) is str and value.isascii():
        if annotation is int and _INT.fullmatch(value):
            return int(value)
        if annotation is float and _FLOAT.fullmatch(value):
            return float(value)
    return _NOT_PLAIN


def convert_plainly(command: Any, ctx: Any) -> None:
    """Give each plain option of a click command, `--help` included (click makes it for the
    context), the light conversion, before the command parses its arguments."""
    runtime = _runtime_param_class()
    if runtime is None:
        return
    for param in [*command.params, command.get_help_option(ctx)]:
        if getattr(param, "_runtime_param", False) is None and _is_plain(param):
            descriptor = param.type_descriptor
            param._runtime_param = runtime(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)


def _is_plain(param: Any) -> bool:
    """A single str / int / float / bool value with none of Typer's extras (a parser, a range,
    a path, a file, choices)."""
    d = param.type_descriptor
    info = d.parameter_info
    return (
        d.annotation in (str, int, float, bool)
        and info.parser is None
        and info.min is None
        and info.max is None
        and not (d.is_path or d.is_file or d.is_choice)
        and param.nargs == 1
        and not param.multiple
    )


@functools.cache
def _runtime_param_class() -> type | None:
    """A RuntimeParam that answers plain values itself and builds Typer's own for the rest;
    None on a Typer without runtime params."""
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
        from typer.core import _TyperParameter
    except ImportError:
        return None
    if not hasattr(_TyperParameter, "get_runtime_param"):
        return None

    class PlainRuntimeParam(RuntimeParam):  # type: ignore[misc]
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            converted = plain_value(self.annotation, value)
            if converted is not _NOT_PLAIN:
                return converted
            param._runtime_param = build_runtime_param(param.type_descriptor)  # Typer's own, from now on
            return param._runtime_param._coerce_value(value, param=param, ctx=ctx)

    return PlainRuntimeParam
