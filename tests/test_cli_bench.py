"""`ffn bench` through the CLI: JSON shape, sweeps, tables, errors, the plot file.

Tiny sizes on CPU with few repeats; no assertion depends on how fast anything runs.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console
from typer.testing import CliRunner

from ffn_cli.benchmark import BenchConfig, BenchEnv, BenchReport, BenchResult
from ffn_cli.benchmark.implementations import parse_impls
from ffn_cli.benchmark.run import run_bench
from ffn_cli.cli import app
from ffn_cli.render.bench import bench_json, bench_view, write_plot
from ffn_cli.spec import FFNSpec

# Tiny, hot cache (no flush per call), one thread (no waiting for a busy second core).
TINY = ["bench", "-d", "16", "-b", "2", "-s", "4", "--repeats", "3", "--warmup-ms", "0", "--cache", "hot", "--threads", "1"]
RESULT_KEYS = {"variant", "device", "dtype", "tokens", "median_ms", "iqr_ms", "tflops", "pct_peak", "samples", "impl", "mode"}


def _json(runner: CliRunner, *args: str) -> dict:
    result = runner.invoke(app, [*TINY, *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _error(runner: CliRunner, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, [*TINY, *args])
    return result.exit_code, result.stderr


def test_json_shape(runner: CliRunner) -> None:
    data = _json(runner, "--variant", "swiglu")
    assert set(data) >= {"results", "env"}
    (r,) = data["results"]
    assert set(r) >= RESULT_KEYS
    assert (r["variant"], r["device"], r["dtype"], r["tokens"], r["samples"]) == ("swiglu", "cpu", "float32", 8, 3)
    assert len(r["samples_ms"]) == 3 and r["median_ms"] > 0 and r["pct_peak"] is None
    env = data["env"]
    assert {"device_name", "torch_version", "threads", "tf32_matmul", "cache", "timer", "date_utc"} <= set(env)
    assert env["cache"] == "hot"


def test_sweep_gives_one_result_per_combination(runner: CliRunner) -> None:
    data = _json(runner, "--variant", "relu,swiglu", "--d-model", "8,16", "--seq-len", "2,4", "--dtype", "float32,float64")
    combos = {(r["variant"], r["d_model"], r["seq_len"], r["dtype"]) for r in data["results"]}
    assert len(data["results"]) == len(combos) == 16


def test_impl_list_and_fastest_mark(runner: CliRunner) -> None:
    data = _json(runner, "--variant", "swiglu", "--impl", "eager,fused")
    assert [r["impl"] for r in data["results"]] == ["eager", "fused"]
    assert sum(r["fastest"] for r in data["results"]) == 1


def test_flags_pick_the_implementation(runner: CliRunner) -> None:
    (r,) = _json(runner, "--variant", "geglu", "--fused")["results"]
    assert r["impl"] == "fused" and r["fused"] is True


def test_backward_checkpoint_and_calibrate(runner: CliRunner) -> None:
    data = _json(runner, "--variant", "swiglu", "--backward", "--checkpoint", "--calibrate", "--threads", "1")
    assert [r["checkpoint"] for r in data["results"]] == [False, True]
    assert all(r["mode"] == "forward+backward" and r["pct_peak"] is not None for r in data["results"])
    assert len(data["checkpoint"]) == 1 and len(data["calibration"]) == 1
    assert data["env"]["threads"] == 1


def test_table_and_bars(runner: CliRunner) -> None:
    result = runner.invoke(app, [*TINY, "--variant", "relu,swiglu"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    for text in ("median ms", "TFLOP/s", "relu", "swiglu", "█", "env", "1 thread"):
        assert text in result.stdout


def test_render_from_the_same_fields() -> None:
    report = run_bench(
        specs=[FFNSpec(variant="swiglu", d_model=8, d_ff=16)],
        impls=parse_impls("eager,fused"),
        batch=1,
        seq_lens=(4,),
        config=BenchConfig(repeats=2, warmup_ms=0, cache="hot"),
    )
    console = Console(width=200, file=io.StringIO(), color_system=None)
    console.print(bench_view(report))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    data = bench_json(report)
    for r in data["results"]:
        assert f"{r['median_ms']:.4g}" in text and r["impl"] in text
    assert "★" in text  # the faster of the two is marked


@pytest.mark.cuda
def test_cuda_bench_through_the_cli(runner: CliRunner) -> None:
    args = ["bench", "-v", "swiglu", "-d", "256", "--d-ff", "512", "-s", "64", "--device", "cuda", "--dtype", "bfloat16"]
    result = runner.invoke(app, [*args, "--impl", "eager,fused", "--backward", "--calibrate", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["env"]["timer"] == "cuda events" and data["env"]["flush_bytes"] > 0
    for r in data["results"]:
        assert r["device"].startswith("cuda") and r["dtype"] == "bfloat16" and r["mem_source"] == "cuda max allocated"
        assert r["pct_peak"] is not None and 0 < r["pct_peak"] < 100 and r["bound"] in ("compute", "memory")
    table = runner.invoke(app, args)
    assert table.exit_code == 0 and "cuda" in table.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_without_cuda_is_one_line(runner: CliRunner) -> None:
    code, err = _error(runner, "--device", "cuda")
    assert code == 1 and "--device cpu" in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--variant", "relu,nope"], "variant"),
        (["--d-model", "8,x"], "--d-model"),
        (["--d-model", ","], "--d-model"),
        (["--seq-len", "0"], "--seq-len"),
        (["--dtype", "float8"], "dtype"),
        (["--cache", "warm"], "cache"),
        (["--checkpoint"], "--backward"),
        (["--impl", "turbo"], "impl"),
        (["--impl", "eager", "--compile"], "impl"),
        (["--repeats", "3", "--min-time", "1"], "min-time"),
        (["--compile", "--compile-mode", "fastest"], "--compile-mode"),
        (["--compile-mode", "max-autotune", "--impl", "eager"], "impl"),
        (["--min-time", "-1"], "--min-time"),
        (["--variant", "relu", "--impl", "fused"], "gated"),
        (["--device", "meta"], "device"),
        (["--plot", "out.txt"], "plot"),
    ],
)
def test_bad_input_exits_2_with_one_line(runner: CliRunner, args: list[str], needle: str) -> None:
    code, err = _error(runner, *args)
    assert code == 2, err
    assert err.startswith("error:") and needle in err and err.count("\n") == 1


def test_plot_without_matplotlib(runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    code, err = _error(runner, "--plot", str(tmp_path / "bench.png"))
    assert code == 1 and "pip install ffn-cli[plot]" in err
    assert not list(tmp_path.iterdir())


def test_plot_is_written_whole(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    config = BenchConfig(repeats=2, warmup_ms=0, cache="hot")
    report = run_bench(specs=[FFNSpec(variant="relu", d_model=8, d_ff=16)], batch=1, seq_lens=(2, 4), config=config)
    target = write_plot(report, str(tmp_path / "bench.png"))
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["bench.png"]  # no temp file left behind


def test_help_lists_the_options(runner: CliRunner) -> None:
    result = runner.invoke(app, ["bench", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--variant", "--d-model", "--seq-len", "--dtype", "--device", "--backward", "--compile", "--fused", "--checkpoint"):
        assert option in result.stdout
    for option in ("--cache", "--calibrate", "--warmup-ms", "--repeats", "--min-time", "--threads", "--plot", "--json", "--impl"):
        assert option in result.stdout


def _fake_report() -> BenchReport:
    """A report with fixed, made-up numbers, so the rendered view can be compared with a golden file."""
    env = BenchEnv(
        device="cuda:0",
        device_name="NVIDIA H200",
        torch_version="2.11.0",
        cuda_version="13.0",
        threads=16,
        tf32_matmul=False,
        float32_matmul_precision="highest",
        cache="cold",
        input_buffers=3,
        flush_bytes=256 << 20,
        timer="cuda events",
        sm_count=132,
        l2_bytes=60 << 20,
        load_avg_1m=0.5,
        cpu_count=16,
        python_version="3.12.3",
        platform="Linux",
        date_utc="2026-01-01T00:00:00Z",
    )
    base = {
        "variant": "swiglu",
        "fused": False,
        "compile_mode": None,
        "checkpoint": False,
        "mode": "forward",
        "device": "cuda:0",
        "dtype": "bfloat16",
        "d_model": 4096,
        "d_ff": 14336,
        "batch": 1,
        "seq_len": 8192,
        "tokens": 8192,
        "cache": "cold",
        "samples": 120,
        "q1_ms": 4.0,
        "q3_ms": 4.1,
        "min_ms": 3.9,
        "rel_iqr": 0.02,
        "noisy": False,
        "flops": 2_886_218_022_912,
        "peak_tflops": 790.0,
        "peak_source": "measured here: bfloat16 GEMM 8192³ and copy",
        "intensity_flop_per_byte": 5900.0,
        "ridge_flop_per_byte": 186.0,
        "bound": "compute",
        "peak_mem_bytes": 2 << 30,
        "extra_mem_bytes": 1 << 30,
        "mem_source": "cuda max allocated",
        "est_mem_bytes": 3 << 30,
        "first_call_s": 0.5,
        "warmup_calls": 70,
        "settings": "no bias",
    }
    rows = [("eager", 5.0, False), ("fused-compile", 4.0, True)]  # made-up times, not measurements
    results = tuple(
        BenchResult(
            impl=impl,
            median_ms=ms,
            iqr_ms=0.1,
            tokens_per_s=8192 / (ms * 1e-3),
            tflops=2_886_218_022_912 / (ms * 1e-3) / 1e12,
            hardware_flops=2_886_218_022_912,
            hardware_tflops=2_886_218_022_912 / (ms * 1e-3) / 1e12,
            pct_peak=100 * 2_886_218_022_912 / (ms * 1e-3) / 1e12 / 790.0,
            fastest=fastest,
            **base,  # type: ignore[arg-type]
        )
        for impl, ms, fastest in rows
    )
    return BenchReport(results=results, env=env)


@pytest.mark.parametrize("width", [80, 120])
def test_rendered_view_matches_golden(golden, width: int) -> None:  # type: ignore[no-untyped-def]
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(bench_view(_fake_report()))
    golden(f"bench_view_{width}.txt", console.file.getvalue())  # type: ignore[attr-defined]


def test_json_of_the_same_report() -> None:
    data = bench_json(_fake_report())
    assert [r["impl"] for r in data["results"]] == ["eager", "fused-compile"]
    assert data["env"]["device_name"] == "NVIDIA H200" and data["results"][1]["fastest"] is True
    json.dumps(data)  # plain JSON, no NaN or custom objects


def test_bench_takes_every_moe_option(runner: CliRunner) -> None:
    """--shared-experts and --capacity-factor, as trace and params take them: the shared
    expert's matmuls are in the FLOPs, as FlopCounterMode counts them on the same module."""
    from torch.utils.flop_counter import FlopCounterMode

    from ffn_cli.modules import build_ffn

    (r,) = _json(runner, "--variant", "moe", "--shared-experts", "1", "--capacity-factor", "4")["results"]
    spec = FFNSpec(variant="moe", d_model=r["d_model"], d_ff=r["d_ff"], shared_experts=1, capacity_factor=4.0)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        build_ffn(spec)(torch.randn(r["tokens"], spec.d_model))
    assert r["flops"] == counter.get_total_flops()


@pytest.mark.parametrize(("tokens", "said"), [(1, "1 token ·"), (8192, "8192 tokens ·")])
def test_the_title_counts_its_tokens_in_the_singular_and_the_plural(tokens: int, said: str) -> None:
    import dataclasses

    report = _fake_report()
    results = tuple(dataclasses.replace(r, tokens=tokens, seq_len=tokens) for r in report.results)
    console = Console(width=200, file=io.StringIO(), color_system=None)
    console.print(bench_view(dataclasses.replace(report, results=results)))
    title = console.file.getvalue().splitlines()[0]  # type: ignore[attr-defined]
    assert said in title and ("1 tokens" not in title), title
