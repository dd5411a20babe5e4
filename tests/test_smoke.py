"""The installed entry point, run as a user runs it: in a subprocess."""

from __future__ import annotations

import subprocess
import sys


def _run(*code_or_args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *code_or_args], capture_output=True, text=True, timeout=120)


def test_help_runs_as_a_module() -> None:
    result = _run("-m", "ffn_cli", "--help")
    assert result.returncode == 0
    for command in ("trace", "params", "bench", "variants"):
        assert f"│ {command} " in result.stdout, command


def test_help_and_params_do_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from ffn_cli.cli import app\n"
        "for args in (['--help'], ['variants'], ['params', '--variant', 'swiglu', '--json']):\n"
        "    assert CliRunner().invoke(app, args).exit_code == 0, args\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    result = _run("-c", code)
    assert result.returncode == 0, result.stderr


def test_bad_input_is_one_line_on_stderr() -> None:
    result = _run("-m", "ffn_cli", "params", "--d-model", "0")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: d_model=0")
    assert "Traceback" not in result.stderr
