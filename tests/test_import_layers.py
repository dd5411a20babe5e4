"""The import layers of docs/design.md, as import-linter checks them (.importlinter): one
direction between layers, no cycle inside a package, no renderer and no rich in a service, no
torch in a pure layer; function-level imports count. The contract itself must be able to fail:
a copy of the package with a new cycle, a service that draws and a torch import in a pure
layer breaks it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("importlinter") is None, reason="import-linter is not installed (pip install -e '.[dev]')"
)


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-c", code, "--config", str(root / ".importlinter"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_package_keeps_its_layers() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "4 kept, 0 broken" in result.stdout


def test_a_new_cycle_a_drawing_service_or_torch_in_a_pure_layer_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "ffn_cli", tmp_path / "ffn_cli", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path)
    with (tmp_path / "ffn_cli" / "variants" / "base.py").open("a") as f:
        f.write("\n\ndef _lazy() -> None:\n    from ffn_cli.modules import build_ffn  # noqa: F401\n")
    with (tmp_path / "ffn_cli" / "accounting.py").open("a") as f:
        f.write("\n\ndef _lazy_torch() -> None:\n    import torch  # noqa: F401\n")
    with (tmp_path / "ffn_cli" / "render" / "format.py").open("a") as f:
        f.write("\n\ndef _lazy_cycle() -> None:\n    from ffn_cli.render import params  # noqa: F401\n")
    with (tmp_path / "ffn_cli" / "services" / "environment.py").open("a") as f:
        f.write("\n\ndef _lazy_view() -> None:\n    import rich.text  # noqa: F401\n    from ffn_cli.render import format  # noqa: F401\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    assert "ffn_cli.variants.base -> ffn_cli.modules" in out  # a layer importing upwards
    assert "ffn_cli.accounting -> torch" in out  # torch in a pure layer
    assert "No cycles are allowed in ffn_cli.render" in out  # a cycle inside a package
    assert "ffn_cli.services.environment -> rich" in out  # a service that draws
    assert "ffn_cli.services.environment -> ffn_cli.render.format" in out
    assert "0 kept, 4 broken" in out
