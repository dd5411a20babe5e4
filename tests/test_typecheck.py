"""The package's annotations held to its code: mypy, as `[tool.mypy]` in pyproject.toml sets it
up, finds nothing in ffn_cli (the package ships py.typed). The check itself must be able to fail:
the same settings refuse a wrong annotation and a `# type: ignore` nothing needs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install -e '.[dev]')")


def _mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    # A cold run checks some 250 modules and their torch and transformers stubs: minutes on a busy machine.
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_package_type_checks_clean() -> None:
    result = _mypy()  # the files pyproject.toml names: ffn_cli
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert result.stdout.startswith("Success: no issues found"), result.stdout


def test_the_settings_refuse_a_wrong_annotation_and_an_unneeded_ignore(tmp_path: Path) -> None:
    module = tmp_path / "wrong.py"
    module.write_text(
        "def width() -> int:\n"
        '    return "wide"\n'
        "\n"
        "\n"
        "def untyped():\n"
        "    n: int = 1\n"
        '    n = "one"\n'  # found only where the bodies of unannotated functions are checked
        "\n"
        "\n"
        "count: int = 3  # type: ignore[assignment]\n",
        encoding="utf-8",
    )
    result = _mypy("--cache-dir", str(tmp_path / "cache"), str(module), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "wrong.py:2: error: Incompatible return value type" in result.stdout
    assert "wrong.py:7: error: Incompatible types in assignment" in result.stdout
    assert 'wrong.py:10: error: Unused "type: ignore" comment' in result.stdout
