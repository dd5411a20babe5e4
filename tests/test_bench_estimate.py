"""`ffn bench` says how long a long sweep will take before it starts, on stderr, terminal or
not. The estimate's arithmetic is checked by hand here; the rate it assumes is set by the test,
so no verdict depends on how fast this machine is."""

from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

from ffn_cli.benchmark import BenchConfig, estimate
from ffn_cli.benchmark import run as bench_run
from ffn_cli.benchmark.case import Case
from ffn_cli.benchmark.implementations import IMPLS
from ffn_cli.cli import app
from ffn_cli.spec import FFNSpec

# relu, d_model 64, d_ff 256: up and down, 2·64·256 FLOPs each per token.
FLOPS_PER_TOKEN = 2 * (2 * 64 * 256)


def _case(tokens: int, *, checkpoint: bool = False) -> Case:
    return Case(FFNSpec("relu", 64, 256), IMPLS["eager"], "float32", 1, tokens, checkpoint)


def test_a_case_is_its_first_call_warm_up_and_timed_calls() -> None:
    # 2 s a call: the first, one call of warm-up (longer than 300 ms), then 10 timed calls at least.
    assert estimate.case_seconds(2.0, BenchConfig()) == 2 + 2 + 10 * 2
    # 1 ms a call: 300 ms of warm-up, 500 ms of timed calls (--min-time's default).
    assert estimate.case_seconds(0.001, BenchConfig()) == pytest.approx(0.001 + 0.3 + 0.5)
    assert estimate.case_seconds(0.5, BenchConfig(repeats=4, warmup_ms=0)) == 0.5 + 0.5 + 4 * 0.5


def test_the_sweep_sums_its_cases_at_the_rate_known() -> None:
    config = BenchConfig(repeats=3, warmup_ms=0, backward=True, checkpoint=True)
    cases = [_case(8), _case(8, checkpoint=True)]
    got = estimate.estimate_sweep(cases, config, lambda dtype: 1e-9, torch.device("cpu"))  # 1,000 FLOP/s
    # The backward: 3 forwards' worth of matmuls, one more when checkpointing recomputes.
    flops = [FLOPS_PER_TOKEN * 8 * 3, FLOPS_PER_TOKEN * 8 * 4]
    assert got.flops == sum(flops) and got.cases == 2 and not got.measured
    assert got.seconds == pytest.approx(sum(5 * f / 1000 for f in flops))  # first + one warm-up call + 3 timed


def test_an_unknown_rate_is_measured_once_per_dtype(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    monkeypatch.setattr(estimate, "gemm_tflops", lambda device, dtype: asked.append(dtype) or 1.0)
    got = estimate.estimate_sweep([_case(8), _case(16)], BenchConfig(), lambda dtype: None, torch.device("cpu"))
    assert asked == ["float32"] and got.measured and got.tflops == {"float32": 1.0}


def test_gemm_rate_is_a_positive_number() -> None:
    assert estimate.gemm_tflops(torch.device("cpu"), "float32") > 0


@pytest.fixture
def rate(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The GEMM rate the estimate assumes, in TFLOP/s, set by the test; no saved profile is read."""
    chosen = [1e-9]
    monkeypatch.setattr(estimate, "gemm_tflops", lambda device, dtype: chosen[0])
    monkeypatch.setattr(bench_run, "profile_for", lambda device_type, named_gpu: None)
    return chosen


ARGS = ["bench", "-v", "relu", "-d", "64", "--d-ff", "256", "--batch", "1", "--seq-len", "8", "--repeats", "3", "--warmup-ms", "1"]


def test_a_long_sweep_is_announced_on_stderr(runner: CliRunner, rate: list[float]) -> None:
    result = runner.invoke(app, [*ARGS, "--json"])  # CliRunner's stderr is no terminal
    assert result.exit_code == 0, result.output
    # 524,288 FLOPs a call at 1,000 FLOP/s: 524 s; the first, one of warm-up, 3 timed: 2,621 s.
    assert FLOPS_PER_TOKEN * 8 == 524_288
    assert result.stderr == (
        "ffn bench: about 44 min for 1 case, warm-up and repeats included: 524 kFLOP of matmuls at float32 1 kFLOP/s "
        "(a GEMM timed just now)\n"
    )
    assert result.stdout.lstrip().startswith("{")  # --json stays clean


def test_a_short_sweep_starts_without_a_word(runner: CliRunner, rate: list[float]) -> None:
    rate[0] = 1.0  # 1 TFLOP/s: well under a second
    result = runner.invoke(app, ARGS)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
