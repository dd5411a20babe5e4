"""Sweeps are counted before any case exists, capped, and checked against memory before any is timed."""

from __future__ import annotations

import itertools

import pytest
from typer.testing import CliRunner

import ffn_cli.benchmark.run as bench_run
from ffn_cli.benchmark.implementations import IMPLS
from ffn_cli.benchmark.plan import DEFAULT_MAX_CASES, SweepPlan
from ffn_cli.cli import app
from ffn_cli.spec import FFNSpec

TINY = ["bench", "-b", "1", "--repeats", "3", "--warmup-ms", "0", "--cache", "hot", "--threads", "1"]


@pytest.fixture
def timed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The labels of the cases that reached the timer (none does: it is replaced)."""
    seen: list[str] = []

    def fake(case: object, sweep: object) -> object:
        seen.append(case.label)  # type: ignore[attr-defined]
        raise AssertionError("a case was timed")

    monkeypatch.setattr(bench_run, "bench_case", fake)
    return seen


def test_a_huge_sweep_is_refused_at_once_with_its_count(runner: CliRunner, timed: list[str]) -> None:
    # Each list within the 64-item cap; their product far past --max-cases. "At once": no case
    # was timed (the fixture fails on the first), however fast the machine.
    d_models = ",".join(str(16 * i) for i in range(1, 61))
    seq_lens = ",".join(str(i) for i in range(1, 61))
    dtypes = "float32,float64,bfloat16,float16"
    args = ["--variant", "relu,gelu,swiglu,moe", "--d-model", d_models, "--seq-len", seq_lens, "--dtype", dtypes]
    result = runner.invoke(app, [*TINY, *args])
    assert result.exit_code == 2, result.output
    count = 4 * 60 * 60 * 4
    assert result.stderr == (
        f"error: the sweep has {count:,} cases (4 variant × 60 d_model × 60 seq_len × 4 dtype), more than the cap of 1,000: "
        "shorten the comma lists, or raise the cap with --max-cases\n"
    )
    assert timed == []


def test_max_cases_raises_the_cap(runner: CliRunner) -> None:
    args = [*TINY, "--d-model", "8", "--seq-len", "1,2,3", "--json"]
    refused = runner.invoke(app, [*args, "--max-cases", "2"])
    assert refused.exit_code == 2 and "has 3 cases" in refused.stderr and "cap of 2" in refused.stderr
    allowed = runner.invoke(app, [*args, "--max-cases", "3"])
    assert allowed.exit_code == 0, allowed.output


@pytest.mark.parametrize("value", ["0", "-1", "10000001"])
def test_max_cases_must_be_a_sane_count(runner: CliRunner, value: str) -> None:
    result = runner.invoke(app, [*TINY, "--max-cases", value])
    assert result.exit_code == 2 and result.stderr.startswith(f"error: --max-cases {value}")


def test_every_case_is_preflighted_before_the_first_is_timed(runner: CliRunner, timed: list[str]) -> None:
    # The second case needs 2^24 tokens × 512 × several buffers of float32: terabytes.
    result = runner.invoke(app, [*TINY, "--d-model", "512", "--seq-len", "512,16777216"])
    assert result.exit_code == 1, result.output
    assert "16777216" in result.stderr and "free" in result.stderr
    assert timed == []


def test_the_cli_default_cap_is_the_core_default() -> None:
    import typer

    bench = typer.main.get_command(app).get_command(None, "bench")  # type: ignore[attr-defined]
    (param,) = [p for p in bench.params if p.name == "max_cases"]
    assert param.default == DEFAULT_MAX_CASES


def test_the_plan_counts_what_it_generates() -> None:
    specs = [FFNSpec(variant=v, d_model=d) for v in ("relu", "swiglu", "moe") for d in (8, 16)]
    impls = [IMPLS["eager"], IMPLS["fused"], IMPLS["compile"]]
    plan = SweepPlan(specs, impls, ("float32", "float64"), 2, (1, 5, 9), checkpoint=True)
    # By hand: fused needs gated FFNs, which swiglu and moe (of swiglu experts) have, relu not.
    runnable = [(s, i) for s, i in itertools.product(specs, impls) if not i.fused or s.variant != "relu"]
    assert len(runnable) == 16
    assert plan.count == 16 * 2 * 3 * 2 == len(list(plan.cases()))
    assert plan.skipped == ["relu fused: the fused gate/up layout needs a gated variant"]
