"""The installed entry point, run as a user runs it: in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


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
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: --d-model 0:")
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash and timeout")
def test_gpu_check_says_at_once_when_ffn_cannot_be_imported(tmp_path: Path) -> None:
    # A GPU machine with torch alone: the anchor still runs, no bench step is tried.
    (tmp_path / "site" / "typer").mkdir(parents=True)
    (tmp_path / "site" / "typer" / "__init__.py").write_text("raise ImportError('no typer here')\n")
    anchor = tmp_path / "anchor.py"
    anchor.write_text("print('anchor ran')\n")
    out = tmp_path / "out"
    env = {**os.environ, "FFN_CHECK_DRY_RUN": "1", "OUT": str(out), "PYTHONPATH": str(tmp_path / "site"), "PYTHON": sys.executable}
    script = Path(__file__).parent.parent / "benchmarks" / "gpu_check.sh"
    result = subprocess.run(["bash", str(script), str(anchor)], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    log = (out / "log.txt").read_text()
    assert "cannot be imported" in log and "anchor ran" in log
    assert not list(out.glob("bench_*.json"))
