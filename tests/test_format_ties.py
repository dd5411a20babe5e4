"""Printed statistics do not depend on the last bit of a float sum.

A mean summed in float32 lands a few parts in 10⁷ either side of its exact value, and which side
depends on the machine (the mean of a softmax over 64 experts is 1/64 = 0.015625, a tie at four
digits). `fmt_value` and `fmt_fixed` round such near-ties one fixed way; every traced example of
the docs prints the same text when each statistic is nudged by that much either way.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_docs_examples import EXAMPLES, _other_releases, _pattern, _stripped, run_example

from ffn_cli.render.format import fmt_fixed, fmt_rate, fmt_value
from ffn_cli.tracing import backward, recorder
from ffn_cli.tracing.result import TensorStats

FLOAT32_NOISE = 2.0**-23  # one float32 ulp, relative: what another summation order moves a sum by


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.015625, "0.01562"),  # 1/64: half to even
        (0.015625000208, "0.01562"),  # the same tie, summed on another machine
        (0.015624999791, "0.01562"),
        (0.015635, "0.01564"),  # a tie whose even neighbour is above
        (-0.015625, "-0.01562"),
        (0.0156251, "0.01563"),  # 6 parts in 10⁶ above the tie: a real difference, rounded up
        (2.5, "2.5"),
        (9.9995, "10"),
        (0.0, "0"),
        (float("inf"), "inf"),
    ],
)
def test_near_ties_round_one_way(value: float, shown: str) -> None:
    assert fmt_value(value) == shown


def test_fixed_decimals_break_ties_the_same_way() -> None:
    assert fmt_fixed(0.12345) == fmt_fixed(0.12345 * (1 + FLOAT32_NOISE)) == fmt_fixed(0.12345 * (1 - FLOAT32_NOISE)) == " 0.1234"
    assert fmt_fixed(-1.5) == "-1.5000"


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).filter(lambda v: abs(v) > 1e-6))
def test_away_from_ties_it_is_plain_four_digit_rounding(value: float) -> None:
    scaled = float(f"{value:.6e}".split("e")[0]) * 1000  # the four kept digits and two more
    if abs(abs(scaled) % 1 - 0.5) > 0.01:
        assert fmt_value(value) == f"{value:.4g}"


def _nudged(factor: float):
    real = recorder.tensor_stats

    def stats(t):
        s: TensorStats | None = real(t)
        if s is None:
            return None
        return dataclasses.replace(s, mean=s.mean * factor, std=s.std * factor, min=s.min * factor, max=s.max * factor)

    return stats


# Not --tp/--ep: their statistics are measured in the ranks' own processes, out of the nudge's reach.
TRACED = [e for e in EXAMPLES if e.command.split()[:2] == ["ffn", "trace"] and not {"meta", "--tp", "--ep"} & set(e.command.split())]


@pytest.mark.skipif(bool(_other_releases()), reason=f"examples rendered with torch 2.13 and rich 15, not {', '.join(_other_releases())}")
@pytest.mark.parametrize("example", TRACED, ids=lambda e: e.id)
def test_docs_examples_do_not_move_with_the_last_bits(example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nudged up and down, an example prints what its file shows (the unnudged run is
    test_docs_examples'). Only where the docs were rendered: another torch computes other
    values, and the docs claim none of them."""
    printed = {}
    for factor in (1 + FLOAT32_NOISE, 1 - FLOAT32_NOISE):
        with monkeypatch.context() as patch:
            patch.setattr(recorder, "tensor_stats", _nudged(factor))
            patch.setattr(backward, "tensor_stats", _nudged(factor))
            printed[factor] = run_example(example, tmp_path / str(factor))
    assert printed[1 + FLOAT32_NOISE] == printed[1 - FLOAT32_NOISE]
    assert _pattern(tuple(_stripped("\n".join(example.expected)).splitlines())).fullmatch(printed[1 + FLOAT32_NOISE])


@pytest.mark.parametrize(
    ("value", "shown"), [(1307.4, "1,307.4"), (15000.0, "15,000"), (1979.0, "1,979"), (989.5, "989.5"), (0.0351234, "0.03512")]
)
def test_a_rate_reads_as_a_datasheet_writes_it(value: float, shown: str) -> None:
    # The roofline's title printed 1307.4 beside 5,300 GB/s, and one FFN's forward 1.31e+03.
    assert fmt_rate(value) == shown


def test_the_roofline_titles_separate_thousands() -> None:
    from typer.testing import CliRunner

    from ffn_cli.cli import app

    out = CliRunner().invoke(app, ["params", "-v", "swiglu", "--gpu", "mi300x", "--dtype", "bfloat16"]).stdout
    assert "bf16 1,307.4 TFLOP/s" in out and "e+" not in out, out
