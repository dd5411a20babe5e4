"""Integer and decimal option values, converted by Typer's documented `parser=` hook.

Typer hands each value to the parser (typed text, or the default, already a number) and shows
the option's annotation in --help as before; a value that is no number of its kind is a usage
error in one plain line: `Invalid value for '--d-ff': not an integer`. What they accept is what
Typer's own conversion accepts for `int` and `float`: surrounding spaces, a sign, `_` between
digits; for an integer also a whole decimal such as `4096.0`, for a number `1e3`, `inf`, `nan`.
"""

from __future__ import annotations

from typing import Any

import typer

from ffn_cli.i18n import _

__all__ = ["parse_float", "parse_int"]


def parse_int(value: Any) -> int:
    """An option's integer: the value itself, or the text as an integer."""
    if type(value) is int:
        return value
    text = str(value).strip()
    whole, dot, fraction = text.partition(".")
    try:
        if dot and whole.lstrip("+-") and not fraction.strip("0"):  # 4096.0: a whole number written as a decimal
            return int(whole)
        return int(text)
    except ValueError:
        raise typer.BadParameter(_("not an integer")) from None


def parse_float(value: Any) -> float:
    """An option's number: the value itself, or the text as a float."""
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        raise typer.BadParameter(_("not a number")) from None


# Typer releases before the pydantic conversion show a parser's name as the option's metavar:
# the names click gives its own integer and decimal types.
parse_int.__name__ = "integer"
parse_float.__name__ = "float"
