"""Shared fixtures: a CliRunner, the golden-file switch, and hypothesis profiles."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

settings.register_profile("ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

GOLDEN_DIR = Path(__file__).parent / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/* from the current output")


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
        assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file (pytest --update-golden rewrites it)"

    return check
