"""`ffn_cli.params(...)` answers what `ffn params` answers: for each set of options, `to_dict()` is
the command's `--json` read back, and a bad option is refused with the command's words."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from ffn_cli.errors import FFNError


def _cli_json(*args: str) -> dict:
    result = CliRunner().invoke(app, ["params", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("name", "keywords", "args"),
    [
        (
            "llama-3.1-8b",
            {"gpu": "h100", "weights": "fp8", "tp": 2, "phase": "decode"},
            ["--preset", "llama-3.1-8b", "--gpu", "h100", "--weights", "fp8", "--tp", "2", "--phase", "decode"],
        ),
        (
            "llama-3.1-8b",
            {"gpu": "a100", "batch": [1, 8], "seq_len": 2048},
            ["--preset", "llama-3.1-8b", "--gpu", "a100", "-b", "1,8", "-s", "2048"],
        ),
        ("gpt2", {"gpu": "h100", "tokens": 512}, ["--preset", "gpt2", "--gpu", "h100", "--tokens", "512"]),
        ("mixtral-8x7b", {"ep": 8}, ["--preset", "mixtral-8x7b", "--ep", "8"]),
        ("gpt2", {"seq_len": [128, 1024], "explain": True}, ["--preset", "gpt2", "-s", "128,1024", "--explain"]),
        ("gpt2", {"dtype": "float32"}, ["--preset", "gpt2", "--dtype", "float32"]),
    ],
)
def test_a_models_answer_is_the_clis_json(name, keywords, args) -> None:
    assert ffn_cli.params(name, **keywords).to_dict() == _cli_json(*args)


@pytest.mark.parametrize(
    ("spec", "keywords", "args"),
    [
        (ffn_cli.FFNSpec("swiglu", 256), {}, ["-v", "swiglu", "-d", "256"]),
        (
            ffn_cli.FFNSpec("swiglu", 256),
            {"seq_len": [64, 4096], "explain": True},
            ["-v", "swiglu", "-d", "256", "-s", "64,4096", "--explain"],
        ),
        (ffn_cli.FFNSpec("relu", 1024), {"gpu": "h100", "batch": [1, 32]}, ["-v", "relu", "-d", "1024", "--gpu", "h100", "-b", "1,32"]),
        (
            ffn_cli.FFNSpec("swiglu", 512, fused_gate_up=True),
            {"gpu": "h100", "phase": "decode", "dtype": "bfloat16"},
            ["-v", "swiglu", "--fused", "--gpu", "h100", "--phase", "decode", "--dtype", "bfloat16"],
        ),
        (ffn_cli.FFNSpec("gelu", 64, bias=False), {"dtype": "float16"}, ["-v", "gelu", "-d", "64", "--no-bias", "--dtype", "float16"]),
    ],
)
def test_an_ffns_answer_is_the_clis_json(spec, keywords, args) -> None:
    assert ffn_cli.params(spec, **keywords).to_dict() == _cli_json(*args)


@pytest.mark.parametrize(
    ("spec", "keywords", "args"),
    [
        (ffn_cli.FFNSpec("swiglu", 512), {"tp": 4}, ["-v", "swiglu", "--tp", "4"]),
        (ffn_cli.FFNSpec("moe", 512), {"ep": 2}, ["-v", "moe", "--ep", "2"]),
        (ffn_cli.FFNSpec("moe", 512), {"ep": 2, "dtype": "bfloat16"}, ["-v", "moe", "--ep", "2", "--dtype", "bfloat16"]),
    ],
)
def test_each_ranks_share_is_the_clis_json(spec, keywords, args) -> None:
    assert ffn_cli.params_per_rank(spec, **keywords).to_dict() == _cli_json(*args)


def test_models_side_by_side_are_the_clis_json() -> None:
    api = ffn_cli.compare(["gpt2", "llama-2-7b"], seq_len=[128, 1024])
    assert api.to_dict() == _cli_json("--preset", "gpt2,llama-2-7b", "-s", "128,1024")
    assert [name for name, *_ in api.value] == ["gpt2", "llama-2-7b"]


def test_config_paths_side_by_side_are_each_read_as_given(tmp_path) -> None:
    # The list is handed as it is: a folder with a comma in its name is one path, as `--config`
    # reads a path that exists as typed (it was joined with commas, then split again, and lost).
    from ffn_cli.configs.files import load_preset

    for folder, preset in (("a,b", "gpt2"), ("c", "qwen2-0.5b")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "config.json").write_text(json.dumps(load_preset(preset)))
    api = ffn_cli.compare([str(tmp_path / "a,b"), str(tmp_path / "c")])
    assert [m["total_params"] for m in api.to_dict()["models"]] == [124_439_808, 494_032_768]  # published totals, in order


def test_an_ffn_on_a_gpu_is_drawn_as_the_cli_draws_it() -> None:
    result = CliRunner().invoke(app, ["params", "-v", "relu", "-d", "1024", "--gpu", "h100"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    assert str(ffn_cli.params(ffn_cli.FFNSpec("relu", 1024), gpu="h100")).split() == result.stdout.split()


@pytest.mark.parametrize(
    ("call", "args", "cli", "api"),
    [
        (
            lambda: ffn_cli.params(ffn_cli.FFNSpec("relu", 64), weights="fp8"),
            ["-v", "relu", "-d", "64", "--weights", "fp8"],
            "applies to a whole model: give --preset, --config or --model",
            "applies to a whole model: give --preset, --config or --model",
        ),
        (
            lambda: ffn_cli.params(ffn_cli.FFNSpec("relu", 64), phase="decode"),
            ["-v", "relu", "-d", "64", "--phase", "decode"],
            "applies to a whole model: give --preset, --config or --model",
            "applies to a whole model: give --preset, --config or --model",
        ),
        (
            lambda: ffn_cli.params("gpt2", batch=8),
            ["--preset", "gpt2", "--batch", "8"],
            "sizes the roofline's pass: add --gpu NAME",
            "sizes the roofline's pass: add gpu=NAME",
        ),
        (
            lambda: ffn_cli.params("gpt2", gpu="h100", tokens=8, batch=2),
            ["--preset", "gpt2", "--gpu", "h100", "--tokens", "8", "-b", "2"],
            "is the pass's size itself: give --tokens or --batch, not both",
            "is the pass's size itself: give tokens or batch, not both",
        ),
    ],
)
def test_a_refused_option_is_refused_with_the_clis_reason(call, args, cli: str, api: str) -> None:
    # The CLI names the option as typed (`--batch 8: …`) and the others it asks for as options
    # (`add --gpu NAME`); the API names those that are its keywords as its caller passes them (`add
    # gpu=NAME`), and the rest as the command line does (`--preset`: params takes a name or a path).
    with pytest.raises(FFNError) as raised:
        call()
    result = CliRunner().invoke(app, ["params", *args])
    assert result.exit_code == 2
    assert result.output.strip().endswith(cli) and raised.value.allowed == api


@pytest.mark.parametrize(
    ("keywords", "shown"),
    [
        ({"batch": 8}, "batch=8 is invalid"),
        ({"batch": [8, 16]}, "batch=[8, 16] is invalid"),
        ({"gpu": "h100", "seq_len": [1, 2]}, "seq_len=[1, 2] is invalid"),
        ({"gpu": "h100", "batch": [0, 8]}, "batch=0 is invalid"),  # the one value refused, as named
    ],
)
def test_a_refusal_names_the_value_as_the_caller_gave_it(keywords: dict, shown: str) -> None:  # type: ignore[type-arg]
    # The request spells a number or a list as the command line does ("8", "1,2"): the API's refusal
    # shows what its caller passed, an int as an int and a list as a list.
    with pytest.raises(FFNError) as raised:
        ffn_cli.params("gpt2", **keywords)
    assert str(raised.value).startswith(shown)


def test_params_on_gpus_never_imports_torch() -> None:
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, ffn_cli; ffn_cli.params('llama-3.1-8b', gpu='h100', weights='fp8', tp=2, phase='decode').to_dict();"
        " ffn_cli.params_per_rank(ffn_cli.FFNSpec('moe', 256), ep=2).to_dict();"
        " ffn_cli.params(ffn_cli.FFNSpec('relu', 256), gpu='h100').to_dict();"
        " print('torch' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert out.stdout.strip() == "False"
