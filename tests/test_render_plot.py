"""The bench picture: whiskers from the quartiles, one file, for 1 or 40 cases."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ffn_cli.render.bench import write_plot
from ffn_cli.render.plot import iqr_tflops
from tests.test_cli_bench import _fake_report


def test_whiskers_are_the_rate_at_each_quartile() -> None:
    r = _fake_report().results[0]
    slow, fast = iqr_tflops(r)
    # By hand: 2,886,218,022,912 FLOP in 4.1 ms and in 4.0 ms.
    assert slow == pytest.approx(2_886_218_022_912 / 4.1e-3 / 1e12)
    assert fast == pytest.approx(2_886_218_022_912 / 4.0e-3 / 1e12)


@pytest.mark.parametrize("cases", [1, 40])
def test_one_file_for_one_case_or_forty(tmp_path: Path, cases: int) -> None:
    pytest.importorskip("matplotlib")
    report = _fake_report()
    base = report.results[0]
    results = tuple(dataclasses.replace(base, variant=("relu", "swiglu")[i % 2], d_model=64 * (i + 1)) for i in range(cases))
    target = write_plot(dataclasses.replace(report, results=results), str(tmp_path / "bench.svg"))
    text = target.read_text()
    assert text.lstrip().startswith(("<?xml", "<svg")) and "roofline" in text
    assert [p.name for p in tmp_path.iterdir()] == ["bench.svg"]
