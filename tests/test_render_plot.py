"""The bench picture: whiskers from the quartiles, one file, for 1 or 40 cases."""

from __future__ import annotations

import dataclasses
import re
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


def test_the_roofline_plot_labels_the_batch_axis_with_the_batches_alone(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from typer.testing import CliRunner

    from ffn_cli.cli import app

    target = tmp_path / "roofline.svg"
    result = CliRunner().invoke(app, ["params", "--preset", "llama-2-7b", "--gpu", "h100", "--batch", "1,8", "--plot", str(target)])
    assert result.exit_code == 0, result.output
    # matplotlib's SVG writes each text it draws as a comment beside its glyphs
    labels = re.findall(r"<!-- (.*?) -->", target.read_text(encoding="utf-8"))
    assert "1" in labels and "8" in labels
    assert not [label for label in labels if r"\times10^{0}" in label], labels
