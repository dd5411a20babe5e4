"""Without the optional `transformers`, ffn says which extra to install, and its tests skip."""

from __future__ import annotations

from pathlib import Path

from ffn_cli.configs.fallback import EXTRA
from tests.without_package import run_without

REPO = Path(__file__).resolve().parent.parent


def test_the_hidden_package_cannot_be_imported(tmp_path: Path) -> None:
    # The helper itself: a check that would pass with transformers importable proves nothing.
    code = "import sys\ntry:\n import transformers\nexcept ModuleNotFoundError:\n sys.exit(3)\n"
    done = run_without("transformers", tmp_path, "-c", code)
    assert done.returncode == 3, done.stderr


def test_a_family_only_transformers_builds_names_the_install_line(tmp_path: Path) -> None:
    done = run_without("transformers", tmp_path, "-m", "ffn_cli", "params", "--config", "docs/examples/jamba-v0.1", cwd=REPO)
    assert done.returncode != 0
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert EXTRA in lines[0]
    assert "jamba" in lines[0]
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr


def test_a_family_ffn_reads_itself_needs_no_transformers(tmp_path: Path) -> None:
    done = run_without("transformers", tmp_path, "-m", "ffn_cli", "params", "--config", "docs/examples/internlm2-7b", cwd=REPO)
    # internlm2 is read by ffn or refused with the install line; never a traceback.
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr
    if done.returncode != 0:
        assert EXTRA in done.stderr or "trust_remote_code" in done.stderr


def test_the_tests_that_need_transformers_skip(tmp_path: Path) -> None:
    tests = ["tests/test_docs_examples.py", "tests/test_models_transformers.py", "tests/test_hybrid_fallback.py"]
    done = run_without(
        "transformers",
        tmp_path,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
        "-rs",
        *tests,
        cwd=REPO,
    )
    assert done.returncode in (0, 5), done.stdout[-3000:]
    assert " failed" not in done.stdout and " error" not in done.stdout, done.stdout[-3000:]
    # They skip, saying why, rather than pass without checking.
    assert "skipped" in done.stdout and EXTRA in done.stdout, done.stdout[-3000:]
