"""--source-len: an encoder-decoder decoding against a shorter source than the most its encoder
hands on. What each decoder layer's cross-attention keeps and scores, worked out by hand from
BART-large's published shape (12 decoder layers, 16 heads of 64, 1,024 positions); what it
refuses, Whisper's source among it (its encoder pads every input to 1,500 frames)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from tests.helpers import cli_json

pytest.importorskip("transformers")

WHISPER = str(Path(__file__).parents[1] / "docs" / "examples" / "whisper-large-v3" / "config.json")
# facebook/bart-large's shape, as its config.json gives it
_BART_LARGE = {"model_type": "bart", "d_model": 1024, "encoder_layers": 12, "decoder_layers": 12, "encoder_attention_heads": 16,
               "decoder_attention_heads": 16, "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096, "vocab_size": 50265,
               "max_position_embeddings": 1024}  # fmt: skip
LAYERS, WIDTH, MOST = 12, 16 * 64, 1024
runner = CliRunner()


@pytest.fixture(scope="module")
def bart(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("bart") / "config.json"
    path.write_text(json.dumps(_BART_LARGE), encoding="utf-8")
    return str(path)


def _source_row(data: dict) -> dict:  # type: ignore[type-arg]
    return next(k for k in data["decode_state"]["kinds"] if "encoder_tokens" in k)  # type: ignore[no-any-return]


@pytest.mark.parametrize("tokens", [300, MOST])
def test_what_decoding_keeps_of_the_source_by_hand(bart: str, tokens: int) -> None:
    args = ["--config", bart, "--gpu", "h200", "--phase", "decode"]
    data = cli_json("params", *args, *(("--source-len", str(tokens)) if tokens != MOST else ()))
    row = _source_row(data)
    # K and V of every source token in every decoder layer, 2 B an element: the context does not enter
    assert row["encoder_tokens"] == tokens and row["layers"] == LAYERS
    assert row["bytes"] == LAYERS * tokens * 2 * WIDTH * 2
    self_attention = LAYERS * MOST * 2 * WIDTH * 2  # the decoder's own 1,024 tokens, its context limit
    assert data["per_gpu_memory"]["kv_cache_bytes"] == self_attention + row["bytes"]


def test_a_token_scores_the_source_it_was_given(bart: str) -> None:
    # Each token decoded scores the source's keys and sums their values: 4 · tokens · heads · head_dim
    # a layer; the projections and the FFN do not change.
    rows = {
        n: cli_json("params", "--config", bart, "--seq-len", "448", *(("--source-len", str(n)) if n != MOST else ())) for n in (MOST, 300)
    }
    flops = {n: r["flops_over_seq_len"]["rows"][0] for n, r in rows.items()}
    assert flops[MOST]["mixer_state_flops"] == LAYERS * 4 * MOST * WIDTH
    assert flops[300]["mixer_state_flops"] == LAYERS * 4 * 300 * WIDTH
    assert flops[300]["ffn_flops"] == flops[MOST]["ffn_flops"]
    assert rows[300]["total_params"] == rows[MOST]["total_params"]


def test_the_note_says_the_source_asked(bart: str) -> None:
    text = " ".join(runner.invoke(app, ["params", "--config", bart, "--seq-len", "64", "--source-len", "300"]).output.split())
    assert "a source of 300 tokens (--source-len)" in text and "a source of 1,024 tokens" not in text
    plain = " ".join(runner.invoke(app, ["params", "--config", bart, "--seq-len", "64"]).output.split())
    assert "a source of 1,024 tokens (max_position_embeddings)" in plain


def test_the_api_takes_it_as_the_command_does(bart: str) -> None:
    args = ("params", "--config", bart, "--gpu", "h200", "--phase", "decode", "--source-len", "300")
    api = ffn_cli.params(bart, gpu="h200", phase="decode", source_len=300).to_dict()
    assert _source_row(api) == _source_row(cli_json(*args))


def test_whispers_encoder_always_hands_on_its_window() -> None:
    # WhisperEncoder takes 3,000 mel frames and no other length: 1,500 positions a source, always
    assert (
        _source_row(cli_json("params", "--config", WHISPER, "--gpu", "h200", "--phase", "decode", "--source-len", "1500"))["encoder_tokens"]
        == 1500
    )
    result = runner.invoke(app, ["params", "--config", WHISPER, "--gpu", "h200", "--source-len", "300"])
    assert result.exit_code == 2 and "pads every input to its window: it always hands on 1,500 tokens" in result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--config", "BART", "--gpu", "h200", "--source-len", "1025"), "encoder hands on at most 1,024 tokens"),
        (("--config", "BART", "--gpu", "h200", "--source-len", "0"), "must be an integer in [1,"),
        (("--config", "BART", "--source-len", "300"), "add --gpu NAME or --seq-len"),
        (("--preset", "llama-3.1-8b", "--gpu", "h200", "--source-len", "100"), "attends to no encoder's output"),
        (("--source-len", "100"), "applies to a whole model"),
        (("--variant", "swiglu", "--gpu", "h100", "--source-len", "100"), "applies to a whole model"),
        (("--preset", "gpt2,llama-3.1-8b", "--seq-len", "64", "--source-len", "100"), "one model at a time"),
    ],
)
def test_what_it_refuses_in_one_line(bart: str, args: tuple[str, ...], said: str) -> None:
    result = runner.invoke(app, ["params", *(bart if a == "BART" else a for a in args)])
    assert result.exit_code == 2, result.output
    assert said in result.stderr and "--source-len" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
