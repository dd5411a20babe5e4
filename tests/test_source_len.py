"""--source-len: an encoder-decoder decoding against a shorter source than the most its encoder
hands on. What each decoder layer's cross-attention keeps and scores, worked out by hand from
Whisper large-v3's published shape (32 decoder layers, 20 heads of 64); what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from tests.helpers import cli_json

pytest.importorskip("transformers")

WHISPER = str(Path(__file__).parents[1] / "docs" / "examples" / "whisper-large-v3" / "config.json")
LAYERS, WIDTH = 32, 20 * 64
runner = CliRunner()


def _source_row(data: dict) -> dict:  # type: ignore[type-arg]
    return next(k for k in data["decode_state"]["kinds"] if "encoder_tokens" in k)  # type: ignore[no-any-return]


@pytest.mark.parametrize("tokens", [300, 1500])
def test_what_decoding_keeps_of_the_source_by_hand(tokens: int) -> None:
    args = ["--config", WHISPER, "--gpu", "h200", "--phase", "decode"]
    data = cli_json("params", *args, *(("--source-len", str(tokens)) if tokens != 1500 else ()))
    row = _source_row(data)
    # K and V of every source token in every decoder layer, 2 B an element: the context does not enter
    assert row["encoder_tokens"] == tokens and row["layers"] == LAYERS
    assert row["bytes"] == LAYERS * tokens * 2 * WIDTH * 2
    self_attention = LAYERS * 448 * 2 * WIDTH * 2  # the decoder's own 448 tokens
    assert data["per_gpu_memory"]["kv_cache_bytes"] == self_attention + row["bytes"]


def test_a_token_scores_the_source_it_was_given() -> None:
    # Each token decoded scores the source's keys and sums their values: 4 · tokens · heads · head_dim
    # a layer; the projections and the FFN do not change.
    rows = {
        n: cli_json("params", "--config", WHISPER, "--seq-len", "448", *(("--source-len", str(n)) if n != 1500 else ()))
        for n in (1500, 300)
    }
    flops = {n: r["flops_over_seq_len"]["rows"][0] for n, r in rows.items()}
    assert flops[1500]["mixer_state_flops"] == LAYERS * 4 * 1500 * WIDTH
    assert flops[300]["mixer_state_flops"] == LAYERS * 4 * 300 * WIDTH
    assert flops[300]["ffn_flops"] == flops[1500]["ffn_flops"]
    assert rows[300]["total_params"] == rows[1500]["total_params"]


def test_the_api_takes_it_as_the_command_does() -> None:
    args = ("params", "--config", WHISPER, "--gpu", "h200", "--phase", "decode", "--source-len", "300")
    api = ffn_cli.params(WHISPER, gpu="h200", phase="decode", source_len=300).to_dict()
    assert _source_row(api) == _source_row(cli_json(*args))


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--config", WHISPER, "--source-len", "1501"), "encoder hands on at most 1,500 tokens"),
        (("--config", WHISPER, "--source-len", "0"), "must be an integer in [1,"),
        (("--preset", "llama-3.1-8b", "--source-len", "100"), "attends to no encoder's output"),
        (("--source-len", "100"), "applies to a whole model"),
        (("--variant", "swiglu", "--gpu", "h100", "--source-len", "100"), "applies to a whole model"),
        (("--preset", "gpt2,llama-3.1-8b", "--source-len", "100"), "one model at a time"),
    ],
)
def test_what_it_refuses_in_one_line(args: tuple[str, ...], said: str) -> None:
    result = runner.invoke(app, ["params", *args])
    assert result.exit_code == 2, result.output
    assert said in result.stderr and "--source-len" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
