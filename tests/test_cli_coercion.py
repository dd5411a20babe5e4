"""Option values converted without pydantic are converted as Typer's own adapters convert them."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app, coercion
from ffn_cli.cli.coercion import _NOT_PLAIN, plain_value

adapters = pytest.importorskip("typer._adapters", reason="this Typer converts through click types, not pydantic")

TEXTS = [
    "0",
    "7",
    "007",
    "-3",
    "-0",
    "123456789012345678",
    "1234567890123456789",
    "99999999999999999999999",
    "1_000",
    " 5",
    "5 ",
    "+5",
    "0x10",
    "1e3",
    "1.5",
    "-2.25",
    "0.1",
    "0.30000000000000004",
    "3.",
    ".5",
    "inf",
    "nan",
    "abc",
    "",
    "١٢",  # Arabic-Indic digits: str.isdigit says yes
    "caf\udce9",  # an undecodable argv byte, as Python hands it over
    "x\x00y",
    "true",
    "no",
]
TYPED = [0, 5, -1, 2.5, 0.0, True, False, "x"]


def _typer(annotation: type, value: Any) -> Any:
    """What Typer's own conversion gives: the adapter it builds for a plain option."""
    from typer.models import OptionInfo

    adapter = adapters.try_build_adapter(annotation, OptionInfo())
    try:
        result = adapter.validate_python(value)
    except Exception as exc:
        return ("raises", type(exc).__name__)
    return (type(result), repr(result))  # repr: -0.0 and 0.0 differ, as do 1 and True


@pytest.mark.parametrize("annotation", [str, int, float, bool])
def test_plain_values_convert_as_typer_converts_them(annotation: type) -> None:
    converted = 0
    for value in [*TEXTS, *TYPED]:
        ours = plain_value(annotation, value)
        if ours is _NOT_PLAIN:
            continue  # left to Typer's own conversion
        converted += 1
        assert (type(ours), repr(ours)) == _typer(annotation, value), (annotation, value)
    assert converted >= 2  # the value of the option's own type at least, and a decimal number where one exists


def test_anything_unusual_is_left_to_typer() -> None:
    # Text Typer might read otherwise than int() / float() do, or reject with its own message.
    for text in ["1_000", " 5", "+5", "0x10", "1e3", ".5", "3.", "inf", "١٢", "1234567890123456789", "abc", ""]:
        assert plain_value(int, text) is _NOT_PLAIN, text
        assert plain_value(float, text) is _NOT_PLAIN, text
    assert plain_value(float, 1) is _NOT_PLAIN  # an int for a float option: pydantic makes 1.0
    assert plain_value(bool, "true") is _NOT_PLAIN


RUNS = [
    ["params", "-v", "swiglu,moe", "-d", "1024", "--ffn-dim-multiplier", "1.3", "--json"],
    ["params", "-d", "+512"],
    ["params", "-d", "1_000", "--json"],
    ["params", "-d", "abc"],
    ["params", "--ffn-dim-multiplier", "1e0", "-d", "4096", "-v", "swiglu", "--json"],
    ["params", "-d", "-4"],
    ["variants", "--json"],
]


def test_commands_print_what_typers_own_conversion_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same runs, first converted plainly, then with Typer's conversion for every value.
    light = [CliRunner().invoke(app, args) for args in RUNS]
    monkeypatch.setattr(coercion, "_runtime_param_class", lambda: None)
    typers = [CliRunner().invoke(app, args) for args in RUNS]
    for args, a, b in zip(RUNS, light, typers, strict=True):
        assert (a.exit_code, a.output) == (b.exit_code, b.output), args
