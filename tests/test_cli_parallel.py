"""`--tp` / `--ep` on trace, params and bench, run through the CLI as a user runs them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app


def test_trace_tp_matches_the_unsharded_module(runner: CliRunner) -> None:
    result = runner.invoke(app, ["trace", "--variant", "swiglu", "--d-model", "32", "--d-ff", "64", "--tp", "2", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["world_size"] == 2
    assert data["max_abs_diff_vs_unsharded"] < 1e-5


def test_trace_ep_splits_the_experts(runner: CliRunner) -> None:
    args = ["trace", "--variant", "moe", "--d-model", "32", "--d-ff", "32", "--experts", "4", "--ep", "2", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["world_size"] == 2 and data["max_abs_diff_vs_unsharded"] < 1e-5


def test_params_tp_is_analytic_and_sums_to_the_whole(runner: CliRunner) -> None:
    result = runner.invoke(app, ["params", "--variant", "swiglu", "--d-model", "4096", "--tp", "4", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["world_size"] == 4
    assert sum(r["params"] for r in data["ranks"]) == data["total_params"] == 3 * 4096 * 11008


def test_bench_tp_times_every_rank(runner: CliRunner) -> None:
    args = ["bench", "--variant", "relu", "--d-model", "32", "--seq-len", "8", "--batch", "1", "--tp", "2"]
    result = runner.invoke(app, [*args, "--repeats", "3", "--warmup-ms", "1", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["world_size"] == 2 and len(data["ranks"]) == 2


def test_indivisible_split_is_one_line_exit_2(runner: CliRunner) -> None:
    for command in ("trace", "params", "bench"):
        result = runner.invoke(app, [command, "--variant", "relu", "--d-model", "8", "--d-ff", "30", "--tp", "4"])
        assert result.exit_code == 2, (command, result.output)
        assert result.stderr.startswith("error: --tp 4: must divide d_ff=30") and result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trace", "--tp", "2", "--block"], "--block: --tp / --ep run"),
        (["trace", "--tp", "2", "--mode", "train"], "--mode train: --tp / --ep run"),
        (["bench", "--tp", "2", "--backward"], "--backward:"),
        (["bench", "--tp", "2", "--impl", "fused"], "--impl fused:"),
        (["bench", "--tp", "2", "--warmup-ms", "nan"], "--warmup-ms nan:"),
        (["bench", "--tp", "2", "--repeats", "0"], "--repeats 0:"),
    ],
)
def test_what_a_sharded_run_would_ignore_is_refused(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(app, [*args, "--d-model", "8", "--d-ff", "32"] if args[0] != "params" else args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {message}") and result.stderr.count("\n") == 1


@pytest.mark.parametrize(("command", "default_s"), [("trace", 120.0), ("bench", 300.0)])
def test_rank_timeout_is_the_ranks_limit(runner: CliRunner, monkeypatch: pytest.MonkeyPatch, command: str, default_s: float) -> None:
    from ffn_cli.errors import FFNRuntimeError
    from ffn_cli.parallel import run as parallel_run

    limits: list[float] = []

    def no_ranks(job: object) -> list[object]:  # what the launcher was handed, without starting ranks
        limits.append(job.timeout_s)  # type: ignore[attr-defined]
        raise FFNRuntimeError("ranks not started")

    monkeypatch.setattr(parallel_run, "run_job", no_ranks)
    args = [command, "--variant", "relu", "--d-model", "8", "--d-ff", "32", "--tp", "2"]
    for extra in ([], ["--rank-timeout", "7.5"], ["--rank-timeout", "1e4"]):
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code == 1 and result.stderr == "error: ranks not started\n", result.output
    assert limits == [default_s, 7.5, 10_000.0]


@pytest.mark.parametrize("command", ["trace", "bench"])
@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--tp", "2", "--rank-timeout", "0"], "--rank-timeout 0.0: seconds, a number in (0, 604800]"),
        (["--tp", "2", "--rank-timeout", "-1"], "--rank-timeout -1.0: seconds, a number in (0, 604800]"),
        (["--tp", "2", "--rank-timeout", "inf"], "--rank-timeout inf: seconds, a number in (0, 604800]"),
        (["--tp", "2", "--rank-timeout", "nan"], "--rank-timeout nan: seconds, a number in (0, 604800]"),
        (["--tp", "2", "--rank-timeout", "1e6"], "--rank-timeout 1000000.0: seconds, a number in (0, 604800]"),
        (["--rank-timeout", "30"], "--rank-timeout 30.0: limits the ranks that --tp / --ep start: add one, or drop it"),
    ],
)
def test_a_bad_rank_timeout_is_one_line(runner: CliRunner, command: str, given: list[str], said: str) -> None:
    result = runner.invoke(app, [command, "--variant", "relu", "--d-model", "8", "--d-ff", "32", *given])
    assert result.exit_code == 2 and result.stderr == f"error: {said}\n", result.output
