"""cli/progress.py: the transient progress line bench and hardware --measure draw on a terminal's
stderr, and nothing where no one would see it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from ffn_cli.cli import progress


def test_no_terminal_no_line(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(progress, "err_console", Console(file=stream))
    assert progress.with_progress(lambda report: report, "starting") is None  # the work hears of no line
    assert stream.getvalue() == ""


def test_a_terminal_sees_each_step(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(progress, "err_console", Console(file=stream, force_terminal=True, width=80))
    steps: list[str] = []

    def work(report: progress.ProgressReport | None) -> int:
        assert report is not None
        for done, what in enumerate(("case 1", "case 2"), 1):
            report(done, 2, what)
            steps.append(stream.getvalue())
        return 42

    assert progress.with_progress(work, "starting") == 42
    assert "case 1" in steps[0] and "1/2" in steps[0] and "case 2" in steps[1] and "2/2" in steps[1]
