"""FFN against attention FLOPs over sequence length, held to FlopCounterMode on real modules:
ffn_cli.block's attention for MHA, GQA and MLA, and transformers' own DeepseekV3Attention for
MLA. Causal means and windows against a brute-force count; the windows against the
layer_types transformers' own config classes derive."""

from __future__ import annotations

import json

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from typer.testing import CliRunner

from ffn_cli.attention import AttentionSpec, LatentAttentionSpec
from ffn_cli.block import BlockSpec, build_block
from ffn_cli.cli import app
from ffn_cli.configs.files import load_preset
from ffn_cli.configs.source import load_model
from ffn_cli.configs.windows import attention_windows
from ffn_cli.models.seq_flops import LayerStack, flops_over_length, mean_keys, single_layer
from ffn_cli.spec import FFNSpec


def _counts(module: torch.nn.Module, *args: object, **kwargs: object) -> dict[str, dict[str, int]]:
    with FlopCounterMode(display=False) as counter:
        module(*args, **kwargs)
    return {name: {str(op): n for op, n in ops.items()} for name, ops in counter.get_flop_counts().items()}


_BLOCK_ATTENTIONS = {
    "MHA": AttentionSpec(64, 4, 4, 16, qkv_bias=False, o_bias=False),
    "GQA": AttentionSpec(64, 8, 2, 8, qkv_bias=False, o_bias=False),
    "MQA-wide-heads": AttentionSpec(64, 4, 1, 24, qkv_bias=False, o_bias=False),
    "MLA": LatentAttentionSpec(64, 4, kv_lora_rank=8, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6, q_lora_rank=16),
}


@pytest.mark.parametrize("kind", list(_BLOCK_ATTENTIONS))
@pytest.mark.parametrize("seq_len", [1, 5, 33])
def test_scores_and_projections_match_flop_counter_on_the_block(kind: str, seq_len: int) -> None:
    ffn = FFNSpec(variant="swiglu", d_model=64, d_ff=96)
    attention = _BLOCK_ATTENTIONS[kind]
    block = build_block(BlockSpec(ffn, attention, "rmsnorm", True), device="meta")
    batch = 3
    counts = _counts(block, torch.empty(batch, seq_len, 64, device="meta"))
    # The block attends both ways: every query reads every key, as a bidirectional stack counts.
    stack = single_layer(ffn, attention)
    stack = LayerStack(stack.ffn_flops, stack.projection_flops, stack.score_flops_per_key, stack.windows, causal=False)
    (row,) = flops_over_length(stack, [seq_len])
    tokens = batch * seq_len
    assert counts["Global"]["aten.bmm"] == row.scores * tokens  # Q·Kᵀ and softmax·V, exactly
    attn_mm = sum(n for op, n in counts["TransformerBlock.attn"].items() if op != "aten.bmm")
    assert attn_mm == row.projections * tokens
    ffn_mm = sum(counts["TransformerBlock.ffn"].values())
    assert ffn_mm == row.ffn * tokens


def test_latent_attention_matches_flop_counter_on_transformers_module() -> None:
    transformers = pytest.importorskip("transformers")
    from transformers.models.deepseek_v3 import modeling_deepseek_v3 as dsv3

    config = transformers.DeepseekV3Config(
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=4,
        q_lora_rank=16,
        kv_lora_rank=8,
        qk_nope_head_dim=8,
        qk_rope_head_dim=4,
        v_head_dim=6,
        num_hidden_layers=1,
        vocab_size=10,
    )
    config._attn_implementation = "eager"
    attention = dsv3.DeepseekV3Attention(config, layer_idx=0)
    batch, seq_len = 2, 7
    x = torch.randn(batch, seq_len, 64)
    rotary = dsv3.DeepseekV3RotaryEmbedding(config)
    position_embeddings = rotary(x, torch.arange(seq_len)[None].expand(batch, seq_len))
    counts = _counts(attention, x, position_embeddings=position_embeddings, attention_mask=None)["Global"]
    spec = LatentAttentionSpec(64, 4, kv_lora_rank=8, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6, q_lora_rank=16)
    assert counts["aten.bmm"] == spec.score_flops_per_token(seq_len) * batch * seq_len
    assert counts["aten.mm"] == spec.projection_flops_per_token() * batch * seq_len


@pytest.mark.parametrize("window", [None, 1, 3, 8, 100])
def test_causal_mean_keys_against_brute_force(window: int | None) -> None:
    for seq_len in range(1, 40):
        keys = sum(1 for i in range(seq_len) for j in range(i + 1) if window is None or i - j < window)
        assert mean_keys(seq_len, window) == (keys, seq_len)
        assert mean_keys(seq_len, None, causal=False) == (seq_len * seq_len, seq_len)


def test_crossover_is_the_first_length_where_attention_wins() -> None:
    stack = LayerStack(ffn_flops=10_000, projection_flops=2_000, score_flops_per_key=(64, 64), windows=(None, 16))
    first = next(n for n in range(1, 10_000) if stack.attention_flops(n) >= stack.ffn_flops)
    assert stack.crossover() == first
    assert LayerStack(10_000, 2_000, (64,), (16,)).crossover() is None  # a window caps the scores


def test_llama_3_8b_by_hand() -> None:
    """32 layers; FFN 3·2·4096·14336, projections 2·4096·(4096 + 2·1024) + 2·4096², scores
    4·4096 per key read, (L + 1)/2 keys on average: attention reaches the FFN at L + 1 = 32768."""
    m = load_model(preset="llama-3-8b")
    from ffn_cli.models.seq_flops import model_stack

    stack = model_stack(m.spec, m.windows, causal=m.causal)
    assert stack.ffn_flops == 32 * 3 * 2 * 4096 * 14336
    assert stack.projection_flops == 32 * (2 * 4096 * (4096 + 2048) + 2 * 4096 * 4096)
    (row,) = flops_over_length(stack, [4096])
    assert row.scores == 32 * 4 * 4096 * 4097 / 2
    assert stack.crossover() == 32767


@pytest.mark.parametrize(
    ("preset", "config_class"),
    [
        ("gemma-2-9b", "Gemma2Config"),
        ("gpt-oss-20b", "GptOssConfig"),
        ("gemma-3-1b", "Gemma3TextConfig"),
        ("qwen2-7b", "Qwen2Config"),
        ("command-r7b", "Cohere2Config"),
        ("exaone-4.0-32b", "Exaone4Config"),
        ("smollm3-3b", "SmolLM3Config"),
    ],
)
def test_windows_match_transformers_layer_types(preset: str, config_class: str) -> None:
    transformers = pytest.importorskip("transformers")
    raw = load_preset(preset)
    config = getattr(transformers, config_class)(**{k: v for k, v in raw.items() if k not in ("architectures", "model_type")})
    n = config.num_hidden_layers
    expected = tuple(raw.get("sliding_window", config.sliding_window) if t == "sliding_attention" else None for t in config.layer_types)
    assert attention_windows(raw, n) == expected


@pytest.mark.parametrize(
    ("model_type", "keys"),
    [
        ("cohere2", {}),  # every fourth layer full by the class's default pattern
        ("cohere2", {"sliding_window_pattern": 2}),
        ("exaone4", {"sliding_window_pattern": 3}),
        ("exaone4", {}),
        ("smollm3", {"use_sliding_window": True, "sliding_window": 64, "layer_types": ["sliding_attention", "full_attention"] * 4}),
        ("smollm3", {"use_sliding_window": False, "sliding_window": 64, "layer_types": ["sliding_attention", "full_attention"] * 4}),
    ],
)
def test_windows_of_the_2025_families_match_their_config_classes(model_type: str, keys: dict[str, object]) -> None:
    transformers = pytest.importorskip("transformers")
    raw = {"model_type": model_type, "num_hidden_layers": 8, **keys}
    config = transformers.AutoConfig.for_model(**raw)
    window = config.sliding_window if getattr(config, "use_sliding_window", True) else None
    expected = tuple(window if t == "sliding_attention" else None for t in config.layer_types)
    assert attention_windows(raw, 8) == expected


def test_qwen2_slides_only_when_asked() -> None:
    transformers = pytest.importorskip("transformers")
    raw = load_preset("qwen2-7b") | {"use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 20}
    config = transformers.Qwen2Config(**{k: v for k, v in raw.items() if k not in ("architectures", "model_type")})
    assert attention_windows(raw, config.num_hidden_layers) == tuple(4096 if t == "sliding_attention" else None for t in config.layer_types)


def test_params_seq_len_json_and_table_agree() -> None:
    runner = CliRunner()
    args = ["params", "--preset", "gemma-2-9b", "--seq-len", "512,131072"]
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)["flops_over_seq_len"]
    assert data["windows"].count(4096) == 21 and data["causal"] is True
    out = runner.invoke(app, args).output
    assert f"attention FLOPs overtake the FFN's at seq_len {data['crossover_seq_len']:,}" in out
    assert f"{100 * data['rows'][1]['ffn_share']:.1f}%" in out
    assert "sliding window 4,096 in 21 of 42 layers" in out


def test_models_side_by_side_table() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["params", "--preset", "llama-3-8b,mistral-7b,qwen3-8b", "--seq-len", "4096", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["models"]
    assert [r["total_params"] for r in rows] == [8_030_261_248, 7_241_732_096, 8_190_735_360]  # the published totals
    assert [r["n_layers"] for r in rows] == [32, 32, 36] and rows[0]["d_ff_over_d_model"] == 14336 / 4096
    out = runner.invoke(app, ["params", "--preset", "llama-3-8b,mistral-7b,qwen3-8b", "--seq-len", "4096"]).output
    assert "32,767" in out and "never" in out  # Mistral's 4,096 window caps its scores
    assert max(len(line) for line in out.splitlines()) <= 80


def test_models_side_by_side_sizes_from_the_published_totals() -> None:
    """Worked from each published total: a bias-free dense model with an untied head runs every
    weight but the embedding and the norms once per token (2 FLOPs each); bfloat16 weights take
    2 bytes a parameter; Gemma 3's vision tower is named."""
    result = CliRunner().invoke(app, ["params", "--preset", "llama-3-8b,gemma-3-4b,deepseek-v3", "--json"])
    llama, gemma, deepseek = json.loads(result.stdout)["models"]
    norms = 32 * 2 * 4096 + 4096
    assert llama["matmul_flops_per_token"] == 2 * (8_030_261_248 - 128_256 * 4096 - norms)
    assert llama["weights_bytes"] == 2 * 8_030_261_248 and (llama["n_heads"], llama["n_kv_heads"]) == (32, 8)
    assert gemma["vision_params"] > 0 == llama["vision_params"] and deepseek["attention_kind"] == "MLA"
    out = CliRunner().invoke(app, ["params", "--preset", "llama-3-8b,gemma-3-4b,deepseek-v3"], env={"COLUMNS": "140"}).stdout
    assert "* gemma-3-4b: the total includes its vision tower" in out and "128 MLA" in out and "32/8" in out


@pytest.mark.parametrize("chunk", [1, 3, 8])
def test_chunked_mean_keys_against_brute_force(chunk: int) -> None:
    for seq_len in range(1, 40):
        keys = sum(1 for i in range(seq_len) for j in range(i + 1) if i // chunk == j // chunk)
        assert mean_keys(seq_len, None, chunk=chunk) == (keys, seq_len)


def test_llama4_chunks_match_transformers_layer_types() -> None:
    transformers = pytest.importorskip("transformers")
    from ffn_cli.configs.windows import attention_chunks

    raw = load_preset("llama-4-scout")
    text = raw["text_config"]
    config = transformers.Llama4TextConfig(**{k: v for k, v in text.items() if k not in ("architectures", "model_type")})
    expected = tuple(config.attention_chunk_size if t == "chunked_attention" else None for t in config.layer_types)
    assert attention_chunks(raw, config.num_hidden_layers) == expected
    assert expected.count(8192) == 36
