"""`ffn_cli.bench(...)` answers what `ffn bench` answers: `to_dict()` is the command's `--json`
for the same options. What a run measures (times, memory peaks, the machine's load, the
warnings they raise) differs between two runs; everything else is compared exactly, and the
measured fields by name and type. Tiny sizes on the CPU: no verdict on speed here."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from ffn_cli.errors import FFNError

# A result's fields that one run measures (tests/test_bench.py checks what they mean).
MEASURED = {
    "samples", "median_ms", "iqr_ms", "q1_ms", "q3_ms", "min_ms", "rel_iqr", "noisy", "tokens_per_s", "tflops",
    "hardware_tflops", "pct_peak", "peak_mem_bytes", "extra_mem_bytes", "first_call_s", "warmup_calls", "fastest",
    "samples_ms", "above_peak", "pct_of_bound", "prediction_error_pct",
}  # fmt: skip
MEASURED_ENV = {"load_avg_1m", "date_utc"}
MEASURED_PARALLEL = {"median_ms", "min_ms"}  # the slowest rank's, and each rank's


def _cli_json(*args: str) -> dict:
    result = CliRunner().invoke(app, ["bench", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _same_kind(api: Any, cli: Any, where: str) -> None:
    """Two measurements of one thing: the same type, and lists of the same kinds."""
    assert type(api) is type(cli), where
    if isinstance(api, list):
        assert all(type(a) in (int, float) for a in api + cli), where


def _assert_same_fields(api: dict, cli: dict, measured: set[str], where: str) -> None:
    """The same keys; a measured field of the same kind, every other field equal."""
    assert api.keys() == cli.keys(), where
    for key in api:
        if key in measured:
            _same_kind(api[key], cli[key], f"{where}.{key}")
        else:
            assert api[key] == cli[key], f"{where}.{key}"


def _assert_same_answer(api: dict, cli: dict) -> None:
    assert api.keys() == cli.keys()
    assert len(api["results"]) == len(cli["results"])
    for i, (a, c) in enumerate(zip(api["results"], cli["results"], strict=True)):
        _assert_same_fields(a, c, MEASURED, f"results[{i}]")
    _assert_same_fields(api["env"], cli["env"], MEASURED_ENV, "env")
    # A warning says what a run saw (noise, a busy machine): words, not the same words each run.
    assert all(isinstance(w, str) for w in api["warnings"] + cli["warnings"])
    for key in api.keys() - {"results", "env", "warnings"}:
        assert api[key] == cli[key], key


@pytest.mark.parametrize(
    ("spec_or_model", "keywords", "args"),
    [
        (
            ffn_cli.FFNSpec("relu", 64),
            {"batch": 1, "seq_len": 8, "repeats": 3, "warmup_ms": 1},
            ["-v", "relu", "-d", "64", "-b", "1", "-s", "8", "--repeats", "3", "--warmup-ms", "1"],
        ),
        (
            ffn_cli.FFNSpec("swiglu", 32, fused_gate_up=True),
            {"batch": 1, "seq_len": [4, 8], "dtype": ["float32", "float64"], "min_time": 0.005, "warmup_ms": 1},
            [
                "-v",
                "swiglu",
                "-d",
                "32",
                "--fused",
                "-b",
                "1",
                "-s",
                "4,8",
                "--dtype",
                "float32,float64",
                "--min-time",
                "0.005",
                "--warmup-ms",
                "1",
            ],
        ),
        (
            ffn_cli.FFNSpec("geglu", 32),
            {"batch": 2, "seq_len": 4, "impl": ["eager", "fused"], "backward": True, "cache": "hot", "repeats": 2, "warmup_ms": 1},
            [
                "-v",
                "geglu",
                "-d",
                "32",
                "-b",
                "2",
                "-s",
                "4",
                "--impl",
                "eager,fused",
                "--backward",
                "--cache",
                "hot",
                "-n",
                "2",
                "--warmup-ms",
                "1",
            ],
        ),
        (
            "gpt2",
            {"batch": 1, "seq_len": 2, "repeats": 2, "warmup_ms": 1, "device": "cpu"},
            ["--preset", "gpt2", "-b", "1", "-s", "2", "--repeats", "2", "--warmup-ms", "1", "--device", "cpu"],
        ),
    ],
)
def test_bench_is_the_clis_json(spec_or_model, keywords, args) -> None:
    _assert_same_answer(ffn_cli.bench(spec_or_model, **keywords).to_dict(), _cli_json(*args))


def test_a_models_layer_is_named_as_the_cli_names_it() -> None:
    api = ffn_cli.bench("gpt2", batch=1, seq_len=2, repeats=2, warmup_ms=1).to_dict()
    assert api["model"]["name"] == "gpt2" and api["results"][0]["d_model"] == 768


def test_a_sharded_forward_is_the_clis_json() -> None:
    api = ffn_cli.bench_sharded(ffn_cli.FFNSpec("relu", 32), tp=2, batch=1, seq_len=4, repeats=2, warmup_ms=1).to_dict()
    cli = _cli_json("-v", "relu", "-d", "32", "--tp", "2", "-b", "1", "-s", "4", "--repeats", "2", "--warmup-ms", "1")
    _assert_same_fields(
        {k: v for k, v in api.items() if k != "ranks"}, {k: v for k, v in cli.items() if k != "ranks"}, MEASURED_PARALLEL, ""
    )
    assert len(api["ranks"]) == len(cli["ranks"]) == 2
    for a, c in zip(api["ranks"], cli["ranks"], strict=True):
        _assert_same_fields(a, c, MEASURED_PARALLEL, f"ranks[{a['rank']}]")


_IMPLS = "a comma list of eager, fused, compile, fused-compile, autotune, fused-autotune, or all"


@pytest.mark.parametrize(
    ("keywords", "args", "cli", "api"),
    [
        (
            {"repeats": 3, "min_time": 1},
            ["--repeats", "3", "--min-time", "1"],
            "give --repeats or --min-time, not both",
            "give repeats or min_time, not both",
        ),
        ({"min_time": 0}, ["--min-time", "0"], "seconds in (0, 3600]", "seconds in (0, 3600]"),
        (
            {"layer": 1},
            ["--layer", "1"],
            "picks a layer of a model: give --preset, --config or --model",
            "picks a layer of a model: give --preset, --config or --model",
        ),
        ({"impl": "nope"}, ["--impl", "nope"], _IMPLS, _IMPLS),
    ],
)
def test_a_refused_option_is_refused_with_the_clis_reason(keywords, args, cli: str, api: str) -> None:
    # The CLI names the option as typed (`--min-time 0: …`) and those it asks for as options; the API
    # names its keywords as its caller passes them (`give repeats or min_time`), the rest as the CLI does.
    with pytest.raises(FFNError) as raised:
        ffn_cli.bench(ffn_cli.FFNSpec("relu", 64), **keywords)
    result = CliRunner().invoke(app, ["bench", "-v", "relu", "-d", "64", *args])
    assert result.exit_code == 2
    assert result.output.strip().endswith(cli) and raised.value.allowed == api
