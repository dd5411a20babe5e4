"""`ffn params` in Chinese, and `--explain` in both languages: goldens at 80 and 120 columns, the
explanation's ratios held to hand formulas from the config, and --json the same in both."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.configs.files import load_preset


def _run(*args: str, width: int = 100) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("width", [80, 120])
def test_golden_params_in_chinese(golden: Any, width: int) -> None:
    golden(f"params_zh_relu_512_{width}.txt", _run("--lang", "zh", "params", width=width))
    golden(f"params_zh_llama_3_1_8b_{width}.txt", _run("--lang", "zh", "params", "--preset", "llama-3.1-8b", width=width))


@pytest.mark.parametrize("width", [80, 120])
def test_golden_explain(golden: Any, width: int) -> None:
    golden(f"params_explain_moe_{width}.txt", _run("params", "-v", "moe", "--shared-experts", "1", "--explain", width=width))
    zh = _run("--lang", "zh", "params", "-v", "moe", "--shared-experts", "1", "--explain", width=width)
    golden(f"params_zh_explain_moe_{width}.txt", zh)


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_the_tutorial_ffn(lang: str) -> None:
    # The tutorials' numbers: FFN 2·512·2048 + 2048 + 512, attention 4·512² + 4·512.
    ffn, attention = 2 * 512 * 2048 + 2048 + 512, 4 * 512 * 512 + 4 * 512
    assert (ffn, attention) == (2_099_712, 1_050_624)
    text = _flat(_run("--lang", lang, "params", "--variant", "relu", "--d-model", "512", "--explain", width=120))
    assert f"{ffn:,}" in text and f"{attention:,}" in text
    assert f"{ffn / attention:.3f}×" in text and f"{100 * ffn / (ffn + attention):.1f}%" in text
    assert f"2 · 512 · 2,048 = {2 * 512 * 2048:,}" in text
    assert ("two thirds" if lang == "en" else "三分之二") in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_a_gated_gqa_model(lang: str) -> None:
    c = load_preset("llama-3.1-8b")
    d, d_ff, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    head_dim = d // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * head_dim, c["num_key_value_heads"] * head_dim
    ffn, attention = layers * 3 * d * d_ff, layers * (2 * d * q + 2 * d * kv)
    text = _flat(_run("--lang", lang, "params", "--preset", "llama-3.1-8b", "--explain", width=120))
    assert f"3 · {d:,} · {d_ff:,} = {3 * d * d_ff:,}" in text
    assert f"{ffn:,}" in text and f"{attention:,}" in text and f"{ffn / attention:.3f}×" in text
    assert f"{kv:,}" in text and f"{q:,}" in text
    # Against the classic block's FFN at this width, 8·d².
    assert f"{8 * d * d:,}" in text and f"{3 * d * d_ff / (8 * d * d):.3g}" in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_a_mixture_total_and_active(lang: str) -> None:
    # 8 swiglu experts of d_ff 1,536 at d 512, a router of 8·512, top-2; attention 4·512².
    d, d_ff, experts, k = 512, 1536, 8, 2
    expert = 3 * d * d_ff
    total, active, attention = experts * d + experts * expert, experts * d + k * expert, 4 * d * d
    text = _flat(_run("--lang", lang, "params", "--variant", "moe", "--explain", width=120))
    assert f"{total:,}" in text and f"{active:,}" in text
    ratios = (total / attention, active / attention)
    assert all((f"{r:.3f}×" if r < 10 else f"{r:.2f}×") in text for r in ratios)


def test_explain_json_carries_the_numbers() -> None:
    data = json.loads(_run("params", "--preset", "mixtral-8x7b", "--explain", "--json"))
    c = load_preset("mixtral-8x7b")
    explain = data["explain"]
    assert explain["ffn_matrices"] == 3 and explain["experts"] == c["num_local_experts"]
    assert explain["ffn_attention_ratio"] == pytest.approx(data["ffn_params"] / data["attention_params"])


def test_explain_refuses_a_comparison() -> None:
    result = CliRunner().invoke(app, ["params", "-v", "relu,gelu", "--explain"])
    assert result.exit_code != 0 and "--explain" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["params"],
        ["params", "-v", "relu,swiglu,moe"],
        ["params", "--preset", "deepseek-v3", "--gpu", "h100", "--weights", "fp8"],
        ["params", "--preset", "gemma-2-9b", "-s", "4096,131072"],
        ["params", "--preset", "llama-3-8b,mixtral-8x7b", "-s", "4096"],
        ["params", "--preset", "llama-3.1-8b", "--explain"],
        ["variants"],
        ["hardware"],
    ],
)
def test_json_is_the_same_in_both_languages(args: list[str]) -> None:
    assert _run("--lang", "zh", *args, "--json") == _run("--lang", "en", *args, "--json")


_FORMAT_ENGLISH = ("scale per", "per tensor", "per row", "not converted", "bits/weight", "everywhere", "zero point", "group index")


@pytest.mark.parametrize(
    "args",
    [
        ["--preset", "gpt-oss-120b"],  # the checkpoint's own quantization_config: mxfp4, attention kept in bf16
        ["--preset", "llama-3.1-8b", "--weights", "fp8"],
        ["--preset", "llama-3.1-8b", "--weights", "nvfp4"],
        ["--preset", "llama-3.1-8b", "--weights", "gptq-int4"],
        ["--preset", "llama-3.1-8b", "--weights", "int8"],
        ["--preset", "gpt-oss-120b", "--weights", "fp8-block"],
        ["--preset", "llama-3.1-8b", "--gpu", "h100"],
    ],
)
def test_weight_formats_are_said_in_chinese(args: list[str]) -> None:
    """The storage plan's words (where the format came from, its scales) are the reader's language;
    --json keeps the English description."""
    zh = _flat(_run("--lang", "zh", "params", *args, width=200))
    assert not [w for w in _FORMAT_ENGLISH if w in zh], zh
    data = json.loads(_run("--lang", "zh", "params", *args, "--json"))
    described = data.get("checkpoint", {}).get("format", {}).get("description", "bits/weight")
    assert "bits/weight" in described


def test_the_rule_of_a_built_count_is_said_in_chinese_and_kept_in_english_in_json(tmp_path: Any) -> None:
    from tests.tiny_families import tiny_config

    config = tmp_path / "config.json"
    # OLMoE with no expert a token: its layout is not read, counted by building it; its head tied
    config.write_text(json.dumps({**tiny_config("olmoe"), "num_experts_per_tok": 0, "tie_word_embeddings": True}))
    runner = CliRunner()
    shown = runner.invoke(app, ["--lang", "zh", "params", "--config", str(config)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "其余全部，按模块列出" in shown.stdout
    assert "未读出它的逐层结构" in shown.stdout and "its layout is not read" not in shown.stdout
    assert "与 model.embed_tokens.weight 绑定：只计一次" in shown.stdout and "is tied to" not in shown.stdout
    assert "everything else" not in shown.stdout and "held by a module" not in shown.stdout
    data = json.loads(runner.invoke(app, ["--lang", "zh", "params", "--config", str(config), "--json"]).stdout)
    other = [r for r in data["rule"] if r["kind"] == "other"]
    assert len(other) == 1 and other[0]["rule"].startswith("everything else, listed by module; whatever a *HyperConnection")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_a_latent_moe_and_a_hybrids_token_mixing(lang: str) -> None:
    # Nemotron 3 Super: each routed expert (relu², up and down) reads the 1,024-wide latent, not d.
    # Its Mamba-2 layers count with its attention: the ratio is over token mixing.
    c = load_preset("nemotron-3-super-120b-a12b")
    latent, d_ff = c["moe_latent_size"], c["moe_intermediate_size"]
    text = _flat(_run("--lang", lang, "params", "--preset", "nemotron-3-super-120b-a12b", "--explain", width=120))
    assert f"2·L·d_ff = 2 · {latent:,} · {d_ff:,} = {2 * latent * d_ff:,}" in text
    assert ("/ token mixing" if lang == "en" else "/ token 混合") in text
    data = json.loads(_run("params", "--preset", "nemotron-3-super-120b-a12b", "--explain", "--json"))
    assert data["explain"]["ffn_width"] == latent and data["explain"]["ffn_weight_params"] == 2 * latent * d_ff


def test_explain_counts_the_output_gate_beside_the_attention() -> None:
    # Qwen3-Next's q_proj writes the queries and an output gate of the same width: the gate half,
    # heads · head_dim × d, is the layer's attention too.
    c = load_preset("qwen3-next-80b-a3b")
    d, q, kv = c["hidden_size"], c["num_attention_heads"] * c["head_dim"], c["num_key_value_heads"] * c["head_dim"]
    gate, norms = q * d, 2 * c["head_dim"]
    text = _flat(_run("params", "--preset", "qwen3-next-80b-a3b", "--explain", width=120))
    assert f"+ {gate:,} beside it (q_proj (output gate half)) = {2 * d * q + 2 * d * kv + norms + gate:,}" in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_a_cross_attention_beside_the_attention(lang: str) -> None:
    # Whisper large-v3's decoder: each of its 32 layers holds a cross-attention beside its own, q, v
    # and o with biases, k without: 4·d² + 3·d. A token runs its q and o (2·d² + 2·d), beside the
    # self-attention, also 4·d² + 3·d; k and v run once a source.
    from pathlib import Path

    pytest.importorskip("transformers")
    whisper = str(Path(__file__).parents[1] / "docs" / "examples" / "whisper-large-v3" / "config.json")
    d, layers = 1280, 32
    cross, own = 4 * d * d + 3 * d, 4 * d * d + 3 * d
    text = _flat(_run("--lang", lang, "params", "--config", whisper, "--explain", width=120))
    beside = "beside it in 32 of the 32 layers" if lang == "en" else "在 32 层中的 32 层里与之并列"
    assert f"{beside}" in text and f"{cross:,}" in text
    assert f"{layers * (own + cross):,}" in text
    runs = layers * (own + 2 * d * d + 2 * d)
    assert f"{runs:,}" in text and ("what a token runs" if lang == "en" else "每个 token 实际运行的部分") in text
    data = json.loads(_run("params", "--config", whisper, "--explain", "--json"))["explain"]
    assert data["attention_active_params"] == runs
    assert data["mixer"] == {"kind": "cross-attention over the encoder's output", "params_per_layer": cross, "layers": 32,
                             "layers_beside_attention": 32}  # fmt: skip
