"""Shared fixtures: a CliRunner, the golden-file switch, and hypothesis profiles."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

# The quick run draws the same examples every time (a failure is the same failure on the next
# run and on another machine); the long run explores.
settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# One set of golden files for every rich the project supports: the floor (14.3.4) and 15 render
# them alike, and scripts/check_floor_versions.sh runs them on both.
GOLDEN_DIR = Path(__file__).parent / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/* from the current output")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked cuda need a CUDA device: skipped where there is none (`pytest -m cuda` runs them)."""
    cuda_tests = [item for item in items if item.get_closest_marker("cuda")]
    if not cuda_tests:
        return
    import torch

    if not torch.cuda.is_available():
        for item in cuda_tests:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA device"))


@pytest.fixture(autouse=True)
def _own_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test its own $XDG_CACHE_HOME: the fallback's cached counts (ffn_cli.configs.built_cache)
    never carry from one test, or from the user's own runs, into another."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Tiny tensors gain nothing from threads, and a busy machine makes thread pools crawl."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def golden(update_golden: bool):
    """check(name, text): compare text with tests/golden/<name>, or rewrite it under --update-golden."""

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / name
        if update_golden or not path.exists():
            if not update_golden:
                pytest.fail(f"no golden file {path}; run pytest --update-golden to create it")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        expected = path.read_text(encoding="utf-8")
        message = f"{name} differs from its golden file (pytest --update-golden rewrites it)"
        assert text == expected, message

    return check


@pytest.fixture(autouse=True)
def _english_unless_asked(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test speaks English whatever the machine's locale; a test of the Chinese output
    asks with --lang zh (or removes FFN_LANG to test the locale)."""
    from ffn_cli.i18n import set_language

    monkeypatch.setenv("FFN_LANG", "en")
    set_language("en")
    yield
    set_language("en")
