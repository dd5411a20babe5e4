"""The errors a learner meets first each say the fix, in one line."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ffn_cli.cli import app

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"
MY_FFN = EXAMPLES / "my_ffn.py"


def _error(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    lines = [line for line in result.stderr.splitlines() if line.startswith(("error:", "错误："))]
    assert len(lines) == 1, result.output
    return result.exit_code, lines[0]


def test_an_unquoted_module_call_is_told_to_quote() -> None:
    # The shell split `--module my_ffn.py:TransformerFFN(512, 2048)` at its space.
    code, line = _error("trace", "--module", f"{MY_FFN}:TransformerFFN(512,", "2048)")
    assert code == 2
    assert f"the shell split --module's value at its spaces: quote it, --module '{MY_FFN}:TransformerFFN(512, 2048)'" in line


def test_a_wrong_width_names_the_modules_width() -> None:
    code, line = _error("trace", "--module", f"{MY_FFN}:TransformerFFN(512, 2048)", "--d-model", "256")
    assert code == 1
    assert line.endswith("; the module reads d_model 512 (from linear1.in_features): give --d-model 512, or drop it")


def test_a_negative_width_is_out_of_range_not_a_non_integer() -> None:
    code, line = _error("trace", "--d-model", "-5")
    assert (code, line) == (2, "error: --d-model -5: must be an integer in [1, 16,777,216]")


def test_a_missing_argument_is_said_in_chinese() -> None:
    code, line = _error("--lang", "zh", "trace", "--module", f"{MY_FFN}:TransformerFFN(512)")
    assert code == 2 and "missing" not in line and "缺少必需的参数：'d_ff'" in line
