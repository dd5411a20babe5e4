"""requests/: the GPU named, the comma lists and each command's request with the rules it is
checked by, read in one place for every command and the API, with one-line errors (exit 2
through the CLI)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from ffn_cli.errors import FFNError
from ffn_cli.hardware import GPUS
from ffn_cli.requests.bench import BenchRequest
from ffn_cli.requests.ffn import OneSpec
from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.requests.lists import parse_int_list, parse_list
from ffn_cli.requests.params import ParamsRequest
from ffn_cli.requests.rules import Conflicts, Needs, Unused, check_rules, given_options
from ffn_cli.spec import FFNSpec


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.key)
def test_each_gpu_of_the_table_is_found_by_its_key(gpu):
    assert resolve_gpu(gpu.key) is gpu


def test_an_unknown_gpu_names_the_closest_keys_and_every_key():
    with pytest.raises(FFNError) as raised:
        resolve_gpu("h10")
    text = str(raised.value)
    assert "did you mean h100" in text
    assert all(g.key in text for g in GPUS)


@pytest.mark.parametrize(
    "args",
    [
        ["params", "--preset", "llama-2-7b", "--gpu", "h10"],
        ["hardware", "--gpu", "h10"],
    ],
)
def test_every_command_refuses_an_unknown_gpu_the_same_way(args):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --gpu h10: did you mean h100")


def test_the_api_refuses_an_unknown_gpu_with_the_cli_words():
    with pytest.raises(FFNError) as raised:
        ffn_cli.params("llama-2-7b", gpu="h10")
    assert str(raised.value) == str(_error(lambda: resolve_gpu("h10")))


def _error(call):
    with pytest.raises(FFNError) as raised:
        call()
    return raised.value


def test_lists_are_stripped_deduplicated_and_keep_their_order():
    assert parse_list("variant", " swiglu, relu,swiglu") == ["swiglu", "relu"]
    assert parse_int_list("batch", "64, 8,64,1") == [64, 8, 1]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("64,,128", "an empty item in the comma list"),
        (",", "one value or a comma list"),
        ("8,x", "an integer or a comma list of integers"),
        ("1" * 20, "far too large for a size"),
    ],
)
def test_a_bad_list_is_one_clear_error(text, words):
    assert words in str(_error(lambda: parse_int_list("batch", text)))


def test_a_bad_list_through_the_cli_is_one_line_and_exit_2():
    result = CliRunner().invoke(app, ["params", "-d", "64,,128"])
    assert result.exit_code == 2
    assert result.output.strip() == "error: --d-model 64,,128: an empty item in the comma list: remove the extra comma"


# --- the rules a request is checked by (requests/rules.py) ---------------------------------


def test_an_option_is_given_when_typed_or_off_its_default():
    values = {"tp": 1, "phase": "prefill", "gpu": "h100", "batch": None}
    defaults = {"tp": 1, "phase": "prefill", "gpu": None, "batch": None}
    assert given_options(values, defaults) == {"gpu": "h100"}
    # Typed at its default (`--phase prefill`) it is given too: the user asked for it.
    assert given_options(values, defaults, typed={"phase"}) == {"phase": "prefill", "gpu": "h100"}


@pytest.mark.parametrize(
    ("rule", "given", "refused"),
    [
        (Conflicts(("a", "b"), "c", "x"), {"b": 2, "a": 1, "c": 3}, "a"),  # the first of a, in the rule's order
        (Conflicts("a", ("c", "d"), "x"), {"a": 1}, None),
        (Needs(("a", "b"), ("c", "d"), "x"), {"b": 2}, "b"),
        (Needs("a", ("c", "d"), "x"), {"a": 1, "d": 4}, None),
        (Unused(("a", "b"), "x"), {"b": 0}, "b"),
        (Unused("a", "x", allowed=(("a", 0.0),)), {"a": 0.0}, None),  # a value that changes nothing
        (Unused("a", "x", allowed=(("a", 0.0),)), {"a": 0.5}, "a"),
    ],
)
def test_each_rule_refuses_the_first_option_it_names(rule, given, refused):
    if refused is None:
        check_rules([rule], given)
        return
    with pytest.raises(FFNError) as raised:
        check_rules([rule], given)
    assert (raised.value.option, raised.value.value, raised.value.allowed) == (refused, given[refused], "x")


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        ({"list_presets": True}, "presets"),
        ({"preset": "gpt2"}, "models"),
        ({"ffn": OneSpec(FFNSpec("relu", 64)), "gpu": "h100"}, "ffn_gpu"),
        ({"ffn": OneSpec(FFNSpec("moe", 64)), "ep": 2}, "ranks"),
        ({"ffn": OneSpec(FFNSpec("relu", 64))}, "ffn"),
        ({"ffn": OneSpec(FFNSpec("relu", 64)), "match_params": True}, None),  # needs two variants
    ],
)
def test_a_params_request_knows_its_answer(options, kind):
    if kind is None:
        with pytest.raises(FFNError, match="two or more variants"):
            ParamsRequest(**options)
        return
    assert ParamsRequest(**options).kind == kind


def test_a_params_request_counts_a_model_in_bfloat16_and_an_ffn_in_float32():
    assert ParamsRequest(preset="gpt2").count_dtype == "bfloat16"
    assert ParamsRequest(ffn=OneSpec(FFNSpec("relu", 64))).count_dtype == "float32"
    with pytest.raises(FFNError, match="dtype"):
        ParamsRequest(ffn=OneSpec(FFNSpec("relu", 64)), dtype="float13")


def test_a_bench_request_is_checked_before_torch_is_needed():
    request = BenchRequest(ffn=OneSpec(FFNSpec("swiglu", 64, fused_gate_up=True)), min_time=0.2)
    assert (request.kind, request.fused, request.min_time_ms, request.specs[0].fused_gate_up) == ("sweep", True, 200.0, False)
    assert BenchRequest(ffn=OneSpec(FFNSpec("relu", 64)), tp=2).kind == "parallel"
    with pytest.raises(FFNError, match=r"\(0, 3600\]"):
        BenchRequest(ffn=OneSpec(FFNSpec("relu", 64)), min_time=3601)
    with pytest.raises(FFNError, match="not both"):
        BenchRequest(ffn=OneSpec(FFNSpec("relu", 64)), repeats=3, min_time=1)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--seq-len", "0"], "--seq-len 0"),
        (["--batch", "-1"], "--batch -1"),
        (["--dtype", "bf16"], "--dtype bf16"),
        (["-d", "0"], "--d-model 0"),
        (["--warmup-ms", "-1"], "--warmup-ms -1"),
        (["--threads", "0"], "--threads 0"),
        (["--checkpoint"], "--checkpoint"),
        (["--cache", "warm"], "--cache warm"),
        (["--compile-mode", "fast"], "--compile-mode fast"),
    ],
)
def test_a_mistyped_bench_option_is_refused_before_torch_is_imported(args: list[str], option: str) -> None:
    code = (
        "import sys\nfrom typer.testing import CliRunner\nfrom ffn_cli.cli import app\n"
        f"result = CliRunner().invoke(app, ['bench', *{args!r}])\n"
        "print(result.exit_code, 'torch' in sys.modules)\nprint(result.output.strip())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    status, error = out.stdout.strip().split("\n", 1)
    assert error.startswith(f"error: {option}"), out.stdout
    assert status == "2 False", out.stdout
