"""The Python API typed and checked: every argument against its annotation at the boundary, in
the CLI's one line (an FFNError naming the keyword); real signatures for `help()` and a type
checker; one result type per function; `str(r)` at the console's width with its numbers whole."""

from __future__ import annotations

import inspect
import io
import json
import re

import pytest
import rich
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app

SPEC = ffn_cli.FFNSpec("relu", 64)

# (the call, the keyword its error names, words of what it allows): each today's raw
# AttributeError or TypeError, or a string taken as true.
BAD = [
    (lambda: ffn_cli.trace(SPEC, mode=None), "mode", "choose one of eval, train"),
    (lambda: ffn_cli.trace(SPEC, mode="EVAL!"), "mode", "choose one of eval, train"),
    (lambda: ffn_cli.trace(SPEC, backward=True, loss=3), "loss", "choose one of random, sum, mse"),
    (lambda: ffn_cli.trace(SPEC, backward="no"), "backward", "True or False"),
    (lambda: ffn_cli.trace(SPEC, batch=2.5), "batch", "a whole number"),
    (lambda: ffn_cli.trace(SPEC, values=True), "values", "a whole number"),
    (lambda: ffn_cli.trace(SPEC, explain=1), "explain", "True or False"),
    (lambda: ffn_cli.params(SPEC, gpu=3), "gpu", "a string"),
    (lambda: ffn_cli.params(SPEC, dtype=3), "dtype", "a string"),
    (lambda: ffn_cli.params("llama-2-7b", weights=1), "weights", "a string"),
    (lambda: ffn_cli.params("llama-2-7b", mtp="no"), "mtp", "True or False"),
    (lambda: ffn_cli.params("llama-2-7b", gpu="h100", phase="Decode"), "phase", "choose one of prefill, decode"),
    (lambda: ffn_cli.params("llama-2-7b", gpu="h100", batch=[1, "64"]), "batch", "a list of them"),
    (lambda: ffn_cli.params("llama-2-7b", tp="8"), "tp", "a whole number"),
    (lambda: ffn_cli.params(3), "spec_or_model", "give an FFNSpec, a preset name or a config.json path"),
    (lambda: ffn_cli.params_per_rank(SPEC, tp=2.0), "tp", "a whole number"),
    (lambda: ffn_cli.compare(["gpt2", 7]), "models", "a list, each a string"),
    (lambda: ffn_cli.bench(SPEC, impl=5), "impl", "a string or a list of them"),
    (lambda: ffn_cli.bench(SPEC, plot=5), "plot", "a string or PathLike"),
    (lambda: ffn_cli.bench(SPEC, cache="warm"), "cache", "choose one of cold, hot"),
    (lambda: ffn_cli.bench(SPEC, warmup_ms=float("nan")), "warmup_ms", "a finite number"),
    (lambda: ffn_cli.bench(SPEC, calibrate="yes"), "calibrate", "True or False"),
    (lambda: ffn_cli.bench_sharded(SPEC, tp=2, seq_len=[4, 8]), "seq_len", "a whole number"),
    (lambda: ffn_cli.bench_sharded(SPEC, tp=2, rank_timeout=0), "rank_timeout", "seconds, a number in (0,"),
    (lambda: ffn_cli.bench_sharded(SPEC, tp=2, rank_timeout="1"), "rank_timeout", "a finite number"),
    (lambda: ffn_cli.FFNSpec(variant=None), "variant", "a string"),
    (lambda: ffn_cli.FFNSpec("relu", 64, bias="no"), "bias", "True or False"),
    (lambda: ffn_cli.FFNSpec("swiglu", 64, fused_gate_up=1), "fused_gate_up", "True or False"),
]


@pytest.mark.parametrize(("call", "option", "words"), BAD)
def test_a_bad_argument_is_one_line_naming_its_keyword(call, option: str, words: str) -> None:
    with pytest.raises(ffn_cli.FFNError) as raised:
        call()
    error = raised.value
    assert error.option == option and words in error.allowed
    assert str(error).startswith(f"{option}=") and "\n" not in str(error)


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (lambda: ffn_cli.trace(SPEC, mode="test"), ["trace", "-v", "relu", "-d", "64", "--mode", "test"]),
        (lambda: ffn_cli.trace(SPEC, backward=True, loss="l1"), ["trace", "-v", "relu", "-d", "64", "--backward", "--loss", "l1"]),
        (lambda: ffn_cli.bench(SPEC, cache="warm"), ["bench", "-v", "relu", "-d", "64", "--cache", "warm"]),
    ],
)
def test_a_wrong_choice_is_refused_with_the_clis_list(call, args: list[str]) -> None:
    with pytest.raises(ffn_cli.FFNError) as raised:
        call()
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    listed = re.search(r"choose (?:one of )?(.*)$", result.output.strip())
    assert listed is not None
    # The CLI lists the same values (`choose one of a, b` or `choose a or b`).
    assert set(re.split(r", | or ", listed.group(1))) == set(raised.value.allowed.removeprefix("choose one of ").split(", "))


def test_the_choices_are_the_ones_the_runs_take() -> None:
    from ffn_cli.benchmark.config import CACHE_MODES
    from ffn_cli.tracing.pipeline import MODES
    from ffn_cli.tracing.result import LOSSES

    assert set(ffn_cli.Mode.__args__) == set(MODES) and set(ffn_cli.Loss.__args__) == set(LOSSES)  # type: ignore[attr-defined]
    assert set(ffn_cli.Cache.__args__) == set(CACHE_MODES) and set(ffn_cli.Phase.__args__) == {"prefill", "decode"}  # type: ignore[attr-defined]


SIGNATURES = {
    "trace": ["module_or_spec", "x", "batch", "seq_len", "d_model", "device", "dtype", "seed", "mode", "values", "depth", "backward"],
    "params": ["spec_or_model", "dtype", "gpu", "weights", "quantize", "tp", "ep", "phase", "batch", "seq_len", "tokens", "mtp", "explain"],
    "compare": ["models", "dtype", "seq_len"],
    "params_per_rank": ["spec", "tp", "ep", "dtype"],
    "bench": ["spec_or_model", "batch", "seq_len", "dtype", "device", "backward", "impl", "cache", "repeats", "plot"],
    "bench_sharded": ["spec_or_model", "tp", "ep", "batch", "seq_len", "dtype", "device", "repeats"],
}


@pytest.mark.parametrize("name", list(SIGNATURES))
def test_help_shows_the_real_keywords_and_their_types(name: str) -> None:
    function = getattr(ffn_cli, name)
    parameters = inspect.signature(function).parameters
    assert set(SIGNATURES[name]) <= set(parameters)
    assert all(p.annotation is not inspect.Parameter.empty for p in parameters.values())
    assert not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters.values())
    assert str(inspect.signature(function).return_annotation).startswith("Result[")
    out = io.StringIO()
    help_text = inspect.getdoc(function)
    assert help_text
    print(inspect.signature(function), file=out)
    assert all(f"{keyword}:" in out.getvalue() for keyword in SIGNATURES[name])


def test_the_typed_keywords_read_their_types() -> None:
    parameters = inspect.signature(ffn_cli.trace).parameters
    assert parameters["mode"].annotation == "Mode" and parameters["backward"].annotation == "bool"
    assert parameters["batch"].annotation == "int" and inspect.signature(ffn_cli.params).parameters["mtp"].annotation == "bool"


def test_each_function_returns_one_type() -> None:
    assert isinstance(ffn_cli.params(SPEC).value, ffn_cli.FFNReport)
    assert isinstance(ffn_cli.params(SPEC, gpu="h100").value, ffn_cli.FFNReport)  # its roofline is in the view and the data
    assert isinstance(ffn_cli.params("gpt2").value, ffn_cli.ModelParams)
    assert isinstance(ffn_cli.params("gpt2", gpu="h100", tp=2).value, ffn_cli.ModelParams)
    ranks = ffn_cli.params_per_rank(ffn_cli.FFNSpec("moe", 64), ep=2).value
    assert [type(r) for r in ranks] == [ffn_cli.RankParams, ffn_cli.RankParams]
    models = ffn_cli.compare(["gpt2", "llama-2-7b"]).value
    assert [(name, type(counts)) for name, counts, *_ in models] == [("gpt2", ffn_cli.ModelParams), ("llama-2-7b", ffn_cli.ModelParams)]
    assert isinstance(ffn_cli.trace(SPEC).value, ffn_cli.TraceResult)


def test_the_other_answers_are_named_by_their_function() -> None:
    with pytest.raises(ffn_cli.FFNError, match="params_per_rank"):
        ffn_cli.params(SPEC, tp=2)
    with pytest.raises(ffn_cli.FFNError, match="compare"):
        ffn_cli.params("gpt2,llama-2-7b")
    with pytest.raises(ffn_cli.FFNError, match="bench_sharded"):
        ffn_cli.bench(SPEC, tp=2)


def test_the_result_types_are_exported() -> None:
    for name in ("Result", "TraceResult", "FFNReport", "ModelParams", "BuiltModel", "RankParams", "BenchReport", "ParallelTiming"):
        assert name in ffn_cli.__all__ and isinstance(getattr(ffn_cli, name), type)
    assert ffn_cli.Result[ffn_cli.TraceResult] is not None  # generic in its value's type


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"(?<![\d,.])\d{1,3}(?:,\d{3})+(?![\d,])", text))


@pytest.mark.parametrize("columns", [80, 120])
def test_print_fits_the_console_with_numbers_whole(columns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    r = ffn_cli.trace(ffn_cli.FFNSpec("relu", 512, d_ff=2048))
    text = str(r)
    assert max(len(line) for line in text.splitlines()) <= columns
    cli = json.loads(CliRunner().invoke(app, ["trace", "-v", "relu", "-d", "512", "--d-ff", "2048", "--json"]).stdout)
    counts = {f"{s['param_count']:,}" for s in cli["steps"] if s["param_count"] >= 1000} | {f"{cli['total_params']:,}"}
    assert counts == {"1,050,624", "1,049,088", "2,099,712"}  # 512·2048 + 2048, 2048·512 + 512, their sum: by hand
    assert counts <= _numbers(text)
    out = io.StringIO()
    rich.print(r, file=out)  # rich's own print still draws the whole table
    assert counts <= _numbers(out.getvalue())


def test_print_is_80_columns_when_the_width_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("JUPYTER_COLUMNS", raising=False)
    text = str(ffn_cli.params("llama-2-7b"))
    assert max(len(line) for line in text.splitlines()) <= 80
    data = ffn_cli.params("llama-2-7b").to_dict()
    assert f"{data['total_params']:,}" in _numbers(text)


def test_the_root_names_the_api_as_api_py_declares_it() -> None:
    # The package root names the API lazily (the command line never loads api.py): its list of
    # names is the API's own, and each resolves to the API's object.
    import ffn_cli.api

    assert set(ffn_cli._API) == set(ffn_cli.api.__all__)
    assert all(getattr(ffn_cli, name) is getattr(ffn_cli.api, name) for name in ffn_cli.api.__all__)
    assert set(ffn_cli.api.__all__) <= set(ffn_cli.__all__)
