"""requests/: the GPU named and the comma lists, read in one place for every command and the
API, with one-line errors (exit 2 through the CLI)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from ffn_cli.errors import FFNError
from ffn_cli.hardware import GPUS
from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.requests.lists import parse_int_list, parse_list


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
