"""Each option declared once: the command's Typer parameters, the request's fields and the API's
keywords name the same options, with the same defaults, so an option added in one place and not
the others fails here. What differs on purpose is listed below, each with its reason; the
choices are the requests' Literal types, and the runs' own tuples hold the same values."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import typing
from dataclasses import dataclass, fields, replace
from typing import Any

import pytest
from typer.main import get_command

import ffn_cli
from ffn_cli.cli import app, bench_cmd, hardware_cmd, params_cmd, trace_cmd
from ffn_cli.cli.ffn_options import FFNOptions
from ffn_cli.cli.options import parse_int_tuple, parse_tuple
from ffn_cli.requests import choices
from ffn_cli.requests.bench import BenchRequest
from ffn_cli.requests.ffn import OneSpec
from ffn_cli.requests.hardware import HardwareRequest
from ffn_cli.requests.params import ParamsRequest
from ffn_cli.requests.trace import TraceRequest
from ffn_cli.requests.view import options_view
from ffn_cli.tracing.options import RunOptions

REQUESTS: dict[str, type] = {"trace": TraceRequest, "params": ParamsRequest, "bench": BenchRequest, "hardware": HardwareRequest}
# How the answer is shown or written (--json, --svg, --html), not what is asked: no request field.
OUTPUT_OPTIONS = {"json", "svg", "html"}
# Request fields that are no option of the command: the FFN group (FFNOptions, its own
# declaration), which options were typed, and what only the API hands a trace (a module, its
# input and width) or the command works out (--json read as `text_only`).
NOT_OPTIONS = {"ffn", "typed"}
API_ONLY = {"trace": {"own", "x", "d_model", "text_only"}}
# A comma list the command line reads at its boundary into the request's tuple.
CLI_READS = {
    ("bench", "seq_len"): lambda text: parse_int_tuple("seq_len", text),
    ("bench", "dtype"): lambda text: parse_tuple("dtype", text),
}
# The API functions and the request each one makes.
API = {
    "trace": TraceRequest,
    "params": ParamsRequest,
    "compare": ParamsRequest,
    "params_per_rank": ParamsRequest,
    "bench": BenchRequest,
    "bench_sharded": BenchRequest,
}
# A keyword named as Python reads it, not as the option: params(mtp=False) is --no-mtp.
API_RENAMED = {("params", "mtp"): ("no_mtp", lambda mtp: not mtp)}
# One value or a list, as the request's tuple.
API_LISTS = {(name, option) for name in ("bench", "bench_sharded") for option in ("seq_len", "dtype")}
# None: a module runs where its parameters are, in their dtype; a spec or a model's layer on the
# request's default (the CPU, float32).
API_OWN_DEFAULTS = {("trace", "device"), ("trace", "dtype")}


def _cli_options(command: str) -> dict[str, Any]:
    group = get_command(app)
    ffn_group = {f.name for f in fields(FFNOptions)}
    params = group.get_command(None, command).params  # type: ignore[attr-defined]
    return {p.name: p.default for p in params if p.name not in ffn_group}


def _request_fields(request: type, command: str) -> dict[str, Any]:
    skip = NOT_OPTIONS | API_ONLY.get(command, set())
    return {f.name: f.default for f in fields(request) if f.init and f.name not in skip}


@pytest.mark.parametrize("command", list(REQUESTS))
def test_each_option_of_a_command_is_one_request_field_with_its_default(command: str) -> None:
    options, request = _cli_options(command), _request_fields(REQUESTS[command], command)
    assert set(options) - OUTPUT_OPTIONS == set(request)
    for name, field_default in request.items():
        read = CLI_READS.get((command, name), lambda value: value)
        assert read(options[name]) == field_default, name


@pytest.mark.parametrize("function", list(API))
def test_each_api_keyword_is_one_request_field_with_its_default(function: str) -> None:
    request = {f.name: f.default for f in fields(API[function]) if f.init}
    keywords = {p.name: p.default for p in inspect.signature(getattr(ffn_cli, function)).parameters.values() if p.kind == p.KEYWORD_ONLY}
    assert keywords
    for name, default in keywords.items():
        field, value = API_RENAMED.get((function, name), (name, lambda value: value))
        assert field in request, f"{function}({name}=…) is no field of {API[function].__name__}"
        if (function, name) in API_LISTS:
            value = lambda value: (value,)  # noqa: E731
        if (function, name) not in API_OWN_DEFAULTS:
            assert value(default) == request[field], name


def _request_call_keywords(command: Any, request: type) -> dict[str, set[str]]:
    """The command's call of its request: each keyword and the names its value reads."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(command))))
    (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == request.__name__]
    assert all(k.arg is not None for k in call.keywords)  # no **options: each one by its name
    return {str(k.arg): {n.id for n in ast.walk(k.value) if isinstance(n, ast.Name)} for k in call.keywords}


@pytest.mark.parametrize(
    ("command", "function"),
    [("trace", trace_cmd.trace), ("params", params_cmd.params), ("bench", bench_cmd.bench), ("hardware", hardware_cmd.hardware)],
)
def test_the_command_hands_each_option_to_the_field_of_its_name(command: str, function: Any) -> None:
    passed = _request_call_keywords(function, REQUESTS[command])
    for name in set(_cli_options(command)) - OUTPUT_OPTIONS:
        assert name in passed.get(name, set()), f"--{name.replace('_', '-')} is not handed to the request's {name}"


def test_the_choices_are_the_runs_own() -> None:
    from ffn_cli.attention import BLOCK_NORMS
    from ffn_cli.benchmark.config import CACHE_MODES
    from ffn_cli.benchmark.implementations import COMPILE_MODES, IMPLS
    from ffn_cli.costs.roofline.model_pass import Phase
    from ffn_cli.tracing.options import MODES
    from ffn_cli.tracing.result import LOSSES

    assert choices.choices(choices.Mode) == MODES and choices.choices(choices.Loss) == LOSSES
    assert choices.choices(choices.Norm) == BLOCK_NORMS and choices.choices(choices.Phase) == typing.get_args(Phase)
    assert choices.choices(choices.Cache) == CACHE_MODES and choices.choices(choices.CompileMode) == COMPILE_MODES
    assert choices.choices(choices.ImplName) == tuple(IMPLS)


@pytest.mark.parametrize(
    ("request_type", "field", "choice"),
    [
        (TraceRequest, "mode", choices.Mode),
        (TraceRequest, "norm", choices.Norm),
        (TraceRequest, "loss", choices.Loss | None),
        (ParamsRequest, "phase", choices.Phase),
        (BenchRequest, "cache", choices.Cache),
        (BenchRequest, "compile_mode", choices.CompileMode),
    ],
)
def test_a_choice_is_its_literal_type_and_checked_when_built(request_type: type, field: str, choice: Any) -> None:
    annotation = next(f.type for f in fields(request_type) if f.name == field)
    assert eval(str(annotation), vars(sys.modules[request_type.__module__])) == choice
    spec = OneSpec(ffn_cli.FFNSpec("relu", 64))
    extra = {"backward": True} if field == "loss" else {}
    with pytest.raises(ffn_cli.FFNError) as raised:
        request_type(ffn=spec, **{field: "nope"}, **extra)
    assert raised.value.option == field and "nope" in str(raised.value)


def test_lists_are_tuples_the_api_hands_as_they_are() -> None:
    spec = OneSpec(ffn_cli.FFNSpec("relu", 64))
    request = BenchRequest(ffn=spec, seq_len=(128, 512, 128), dtype=("float32", "bfloat16"), impl=("eager", "fused"))
    assert (request.seq_len, request.dtype, request.impl) == ((128, 512), ("float32", "bfloat16"), ("eager", "fused"))
    assert ParamsRequest(ffn=spec, seq_len=(64, 64, 32)).seq_lens == (64, 32)  # as `-s 64,64,32`: de-duplicated, in order
    with pytest.raises(ffn_cli.FFNError, match="seq_len=0"):
        BenchRequest(ffn=spec, seq_len=(128, 0))
    # A refusal names a list as it is typed.
    with pytest.raises(ffn_cli.FFNError, match="seq_len='128,512' is invalid"):
        ParamsRequest(ffn=OneSpec(ffn_cli.FFNSpec("relu", 64)), seq_len=(128, 512), tp=2)


def test_the_run_options_are_the_requests_own_values() -> None:
    request = TraceRequest(
        ffn=OneSpec(ffn_cli.FFNSpec("relu", 64)), batch=3, seq_len=7, seed=11, mode="train", values=4, backward=True, loss="mse", ops=True
    )
    run = request.run_options("bfloat16")
    expected = RunOptions(batch=3, seq_len=7, device="cpu", dtype="bfloat16", seed=11, mode="train", values=4, backward=True, loss="mse")
    assert run == expected  # aten: True, as --ops asks


def test_a_view_of_a_request_that_lacks_a_field_fails_at_once() -> None:
    @dataclass(frozen=True)
    class Wants:
        batch: int
        colour: str = "red"

    @dataclass(frozen=True)
    class Asked:
        batch: int = 2

    assert options_view(Wants, Asked(), colour="blue") == Wants(2, "blue")
    with pytest.raises(AttributeError, match="colour"):
        options_view(Wants, Asked())


def test_a_model_resolves_a_new_request_and_leaves_the_one_made() -> None:
    made = TraceRequest(preset="llama-3.1-8b", tp=2)
    assert made.kind == "variant"  # a model's answer is known once it is read
    assert made.resolve(own_module=False).kind == "parallel" and made.kind == "variant"
    own = TraceRequest(preset="llama-3.1-8b", depth=2)
    assert own.resolve(own_module=True).kind == "model_module" and own.kind == "variant"
    with pytest.raises(ffn_cli.FFNError, match="tp=2"):
        made.resolve(own_module=True)  # transformers' own module is not sharded here


def test_how_bench_measures_is_the_requests_own_values() -> None:
    from ffn_cli.benchmark.config import BenchConfig

    spec = OneSpec(ffn_cli.FFNSpec("relu", 64))
    request = BenchRequest(ffn=spec, warmup_ms=5, repeats=3, threads=2, seed=4, cache="hot", backward=True, checkpoint=True, calibrate=True)
    expected = BenchConfig(
        device="cpu", backward=True, checkpoint=True, cache="hot", warmup_ms=5, repeats=3, min_time_ms=500.0, threads=2, calibrate=True
    )
    assert request.bench_config(gpu="h100") == replace(expected, seed=4, gpu="h100")
    with pytest.raises(ffn_cli.FFNError, match="warmup_ms=-1"):
        BenchRequest(ffn=spec, warmup_ms=-1)  # as the request is made, not once the sweep starts


def test_the_ffn_options_hold_tuples_read_once_from_the_comma_text() -> None:
    # As the command line types them: read once, as the group is made; the names stay as typed
    # (the registry reads SwiGLU as swiglu when the request asks for the FFNs).
    typed = FFNOptions(variant="relu, SwiGLU,relu", d_model="64, 128")  # type: ignore[call-arg]
    assert (typed.variant, typed.d_model) == (("relu", "SwiGLU"), (64, 128))
    assert typed.variants() == ["relu", "swiglu"]
    assert FFNOptions(variant=("gelu",), d_model=(32,)).variant == ("gelu",)  # type: ignore[call-arg]
    with pytest.raises(ffn_cli.FFNError, match="d_model='64,,128'"):
        FFNOptions(d_model="64,,128")  # type: ignore[call-arg]
    # A refusal names the list as it is typed, not as a tuple.
    with pytest.raises(ffn_cli.FFNError, match="d_model='64,128' is invalid"):
        TraceRequest(ffn=FFNOptions(d_model="64,128"))  # type: ignore[call-arg]


def test_params_names_its_models_as_tuples_the_cli_splits_once(tmp_path: Any) -> None:
    from ffn_cli.cli.options import parse_names, parse_paths

    assert ParamsRequest(preset=("gpt2", " gpt2", "llama-2-7b")).preset == ("gpt2", "llama-2-7b")
    assert parse_names("preset", "gpt2, llama-2-7b") == ("gpt2", "llama-2-7b")
    # A config path that exists as typed is one path, commas and all; else the text is a list.
    folder = tmp_path / "a,b"
    folder.mkdir()
    assert parse_paths("config", str(folder)) == (str(folder),)
    assert parse_paths("config", f"{tmp_path}/x.json,{tmp_path}/y.json") == (f"{tmp_path}/x.json", f"{tmp_path}/y.json")
    with pytest.raises(ffn_cli.FFNError, match="one name or a comma list"):
        parse_names("preset", " , ")
    with pytest.raises(ffn_cli.FFNError, match="preset='gpt2,llama-2-7b' is invalid"):
        ParamsRequest(preset=("gpt2", "llama-2-7b"), list_presets=True)
