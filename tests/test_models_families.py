"""The readers without transformers: any value under any key of any family's config is a
count or one FFNError line, never another exception; the kinds of attention and the layouts
the new families bring, each against a hand computation."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ffn_cli.attention import AttentionSpec, LatentAttentionSpec
from ffn_cli.configs.families import GPT_OSS_EXPERT_VARIANT, model_spec_from_config
from ffn_cli.configs.files import load_preset
from ffn_cli.configs.source import preset_model
from ffn_cli.errors import FFNError
from ffn_cli.models.count import count_model
from ffn_cli.models.layer import attention_summary
from tests.model_configs import CASES, small_config

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 1 << 26) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A small config of some family with one key (top-level or nested) set to any JSON value."""
    model_type, keys = draw(st.sampled_from(CASES))
    config = json.loads(json.dumps(small_config(model_type, keys)))
    target = config
    nested = [k for k, v in config.items() if isinstance(v, dict)]
    if nested and draw(st.booleans()):
        target = config[draw(st.sampled_from(nested))]
    key = draw(st.sampled_from(sorted(target)))
    target[key] = draw(_JSON)
    return config


@given(mutated())
def test_any_value_counts_or_is_one_error_line(config: dict[str, Any]) -> None:
    try:
        m = count_model(model_spec_from_config(config))
    except FFNError as exc:
        assert "\n" not in str(exc)
        return
    assert m.total_params == sum(p.params for p in m.parts) > 0
    assert 0 < m.active_params <= m.total_params


@pytest.mark.parametrize(("model_type", "keys"), CASES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CASES)])
def test_parts_sum_to_the_total(model_type: str, keys: dict[str, Any]) -> None:
    m = count_model(model_spec_from_config(small_config(model_type, keys)))
    assert sum(p.params for p in m.parts) == m.total_params
    assert m.ffn_attention_ratio == m.ffn_params / m.attention_params


# --- attention kinds, by hand ------------------------------------------------------------------


def test_kinds_of_attention() -> None:
    assert AttentionSpec(64, 8).kind == "MHA"
    assert AttentionSpec(64, 8, 2).kind == "GQA"
    assert AttentionSpec(64, 8, 1).kind == "MQA"


def test_qk_norms_per_head_and_over_the_projection_and_sinks() -> None:
    plain = AttentionSpec(64, 8, 2, qkv_bias=False, o_bias=False)
    head = AttentionSpec(64, 8, 2, qkv_bias=False, o_bias=False, qk_norm="head")
    proj = AttentionSpec(64, 8, 2, qkv_bias=False, o_bias=False, qk_norm="proj")
    sinks = AttentionSpec(64, 8, 2, qkv_bias=False, o_bias=False, sinks=True)
    assert head.params - plain.params == 2 * 8  # RMSNorm(head_dim) on q and on k
    assert proj.params - plain.params == 64 + 16  # RMSNorm(q_dim) + RMSNorm(kv_dim)
    assert sinks.params - plain.params == 8  # one logit per head
    with pytest.raises(FFNError, match="qk_norm"):
        AttentionSpec(64, qk_norm="both")  # type: ignore[arg-type]


def test_latent_attention_by_hand() -> None:
    # DeepSeek-V3's shapes: q 7168 → 1536 → 128·192, kv 7168 → 512 + 64 → 128·256, o 128·128 → 7168.
    a = LatentAttentionSpec(7168, 128, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, q_lora_rank=1536)
    expected = 7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168
    assert a.params == expected == 187_107_328
    assert a.projection_flops_per_token() == 2 * (expected - 1536 - 512)
    lite = LatentAttentionSpec(2048, 16, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
    assert lite.params == 2048 * 16 * 192 + 2048 * 576 + 512 + 512 * 16 * 256 + 16 * 128 * 2048
    assert "MLA" in attention_summary(a) and "1,536" in attention_summary(a)
    with pytest.raises(FFNError, match="kv_lora_rank"):
        LatentAttentionSpec(64, 4, kv_lora_rank=0, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8)


# --- the layouts the new families bring ---------------------------------------------------------


def _llama_like(model_type: str, **extra: Any) -> dict[str, Any]:
    base = {"model_type": model_type, "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 4, "num_attention_heads": 4}
    return {**base, "vocab_size": 100, **extra}


def test_omitted_keys_take_the_class_defaults() -> None:
    # LlamaConfig(): d 4096, 32 layers, d_ff 11008, vocab 32000, untied: Llama-2-7B's 6,738,415,616.
    assert count_model(model_spec_from_config({"model_type": "llama"})).total_params == 6_738_415_616


def test_any_activation_counts_with_a_stand_in_of_the_same_layout() -> None:
    silu = count_model(model_spec_from_config(_llama_like("llama")))
    quick = count_model(model_spec_from_config(_llama_like("llama", hidden_act="quick_gelu")))
    assert quick.total_params == silu.total_params
    assert "quick_gelu counted as swiglu" in next(p.detail for p in quick.parts if p.kind == "ffn")


def test_gpt2_cross_attention_adds_an_attention_and_a_norm_per_layer() -> None:
    config = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "vocab_size": 50257}
    plain = count_model(model_spec_from_config(config)).total_params
    cross = count_model(model_spec_from_config({**config, "add_cross_attention": True})).total_params
    assert cross - plain == 12 * (4 * 768 * 768 + 4 * 768 + 2 * 768) == 28_366_848


def test_qwen2_moe_keeps_the_shared_expert_gate_at_width_zero() -> None:
    config = _llama_like("qwen2_moe", num_experts=4, moe_intermediate_size=16, num_experts_per_tok=2)
    with_shared = count_model(model_spec_from_config({**config, "shared_expert_intermediate_size": 32}))
    without = count_model(model_spec_from_config({**config, "shared_expert_intermediate_size": 0}))
    assert with_shared.total_params - without.total_params == 4 * 3 * 64 * 32  # the shared MLP only; the gate stays
    assert without.ffn_active_params - 4 * (4 * 64 + 2 * 3 * 64 * 16) == 4 * 64  # the (1, d) gate, every layer


def test_gpt_oss_experts_are_biased_and_the_router_has_a_bias() -> None:
    s = preset_model("gpt-oss-20b")
    assert s.moe_ffn is not None and s.moe_ffn.expert_variant == GPT_OSS_EXPERT_VARIANT and s.moe_ffn.bias
    assert [t.name for t in s.moe_extra] == ["router.bias"]
    e, d, f = 32, 2880, 2880
    one_layer = e * d + e + e * (3 * d * f + 2 * f + d)
    m = count_model(s)
    assert m.ffn_params == 24 * one_layer
    assert m.attention_params == 24 * (2880 * 4096 + 4096 + 2 * (2880 * 512 + 512) + 4096 * 2880 + 2880 + 64)


def test_llama4_interleaves_moe_layers_with_a_shared_expert() -> None:
    config = _llama_like(
        "llama4_text", num_key_value_heads=4, num_local_experts=4, num_experts_per_tok=1, intermediate_size_mlp=96, head_dim=16
    )
    s = model_spec_from_config({**config, "interleave_moe_layer_step": 2})
    assert s.moe_layers == (1, 3) and s.dense_layers == (0, 2)
    assert s.moe_ffn is not None and s.moe_ffn.shared_hidden == 160 and s.dense_ffn is not None and s.dense_ffn.hidden == 96
    assert model_spec_from_config({**config, "moe_layers": [0]}).moe_layers == (0,)


def test_deepseek_v3_first_dense_layers_and_routing_without_parameters() -> None:
    s = preset_model("deepseek-v3")
    assert s.dense_layers == (0, 1, 2) and len(s.moe_layers) == 58
    assert "grouped: top-4 of 8 groups" in s.routing and "2.5" in s.routing
    # transformers' DeepseekV3TopkRouter scores by sigmoid; DeepseekV2's router by softmax
    assert s.routing.startswith("sigmoid") and "sigmoid" not in preset_model("deepseek-v2-lite").routing
    assert isinstance(s.attention, LatentAttentionSpec) and s.attention.q_lora_rank == 1536
    assert model_spec_from_config(load_preset("deepseek-v2-lite")).attention.q_lora_rank is None  # type: ignore[union-attr]


def test_multimodal_totals_include_the_tower_and_say_so() -> None:
    m = count_model(preset_model("gemma-3-4b"))
    assert m.vision_params > 0 and m.text_params + m.vision_params == m.total_params
    text_only = count_model(model_spec_from_config({**load_preset("gemma-3-4b")["text_config"]}))
    assert text_only.total_params == m.text_params


def test_falcon_multi_query_fuses_one_kv_head() -> None:
    s = model_spec_from_config(load_preset("falcon-7b"))
    assert (s.attention.n_kv_heads, s.norms_per_layer, s.parallel_block, s.fused_qkv) == (1, 1, True, True)
    assert s.attention.params == 4544 * (4544 + 2 * 64) + 4544 * 4544


def test_phi_head_bias_survives_tying() -> None:
    config = _llama_like("phi", tie_word_embeddings=True)
    heads = [p for p in count_model(model_spec_from_config(config)).parts if p.kind == "head"]
    assert [p.params for p in heads] == [100]


def test_gemma3n_shared_kv_layers_lose_k_v_and_k_norm_by_hand() -> None:
    s = preset_model("gemma-3n-e4b")
    assert s.kv_shared_layers == tuple(range(20, 35)) and s.ffn_note_layers == tuple(range(10))
    # q (2,048 → 8 × 256) and o, k and v (2,048 → 2 × 256), q_norm and k_norm over 256
    own = 2 * 2048 * 2048 + 2 * 512 * 2048 + 2 * 256
    assert (s.attention_params_of(0), s.attention_params_of(20)) == (own, own - 2 * 512 * 2048 - 256)
    # an attention layer's projections, less k and v: 2 FLOPs a weight
    assert s.attention_flops_of(0) - s.attention_flops_of(34) == 2 * 2 * 512 * 2048
    m = count_model(s)
    # the second embedding table: 262,144 rows of 35 layers × 256, an embedding (no matmul)
    assert next(p.params for p in m.parts if p.name == "per-layer embeddings") == 262_144 * 35 * 256
    assert m.embedding_params == 262_400 * 2048 + 262_144 * 35 * 256
    assert sum(p.params for p in m.parts if p.kind == "other") == (
        35 * 256 * 2048  # per_layer_model_projection
        + 6 * 2048 * 2048  # 3 altup_projections, 3 altup_unembed_projections
        + 35 * (2048 + 4 * 4 + 16 * 4 + 4 * 2048 + 2 * 64 * 2048 + 2 * 256 * 2048)  # AltUp, Laurel, per-layer input gate
    )


def test_gemma3n_widths_that_differ_by_layer_are_one_ffn_row_each() -> None:
    widths = [8192] * 10 + [4096] * 10 + [8192] * 10  # a MatFormer slice: narrower middle layers
    s = model_spec_from_config({**load_preset("gemma-3n-e2b"), "intermediate_size": widths})
    rows = [(p.params_each, p.copies) for p in count_model(s).parts if p.kind == "ffn"]
    assert rows == [(3 * 2048 * 8192, 20), (3 * 2048 * 4096, 10)]  # gate, up and down of each width
    assert [s.ffn_of(i).hidden for i in (0, 10, 29)] == [8192, 4096, 8192]  # type: ignore[union-attr]
    assert s.ffn_of(0) is s.ffn_of(29)  # one FFNSpec a width


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"num_kv_shared_layers": 30}, "num_kv_shared_layers=30 is invalid"),
        # the one full layer is shared: no earlier full layer gives it keys and values
        ({"layer_types": ["sliding_attention"] * 29 + ["full_attention"]}, "num_kv_shared_layers=10 is invalid"),
        ({"intermediate_size": [8192] * 3}, "intermediate_size=[8192, 8192, 8192] is invalid"),
        ({"activation_sparsity_pattern": [0.95]}, "activation_sparsity_pattern=[0.95] is invalid"),
        ({"activation_sparsity_pattern": ["0.95"] * 30}, "must hold a number for each layer"),
    ],
)
def test_gemma3n_inconsistent_layers_are_one_error_naming_the_key(keys: dict[str, Any], message: str) -> None:
    with pytest.raises(FFNError, match=re.escape(message)) as caught:
        model_spec_from_config({**load_preset("gemma-3n-e2b"), **keys})
    assert "\n" not in str(caught.value)


# --- through the CLI ---------------------------------------------------------------------------


def test_cli_counts_a_multimodal_config_and_says_the_tower_is_included(runner: Any, tmp_path: Any) -> None:
    from ffn_cli.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(load_preset("llama-4-scout")))
    result = runner.invoke(app, ["params", "--config", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total_params"] == 108_641_793_536
    assert data["vision_params"] + data["text_params"] == data["total_params"]
    assert data["tower_params"] == {"images": data["vision_params"]}
    table = runner.invoke(app, ["params", "--config", str(path)]).output
    assert "vision tower" in table and "included in the total" in table


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model_type": "llama4", "vision_config": {"hidden_size": -1}}, "key vision_config.hidden_size = -1:"),
        ({"model_type": "gemma3", "text_config": {"num_attention_heads": 7}}, "key text_config.num_key_value_heads = 4:"),
        ({"model_type": "llama", "hidden_size": 100, "num_attention_heads": 7}, "or the config must give head_dim"),
        ({"model_type": "deepseek_v3", "q_lora_rank": "wide"}, "key q_lora_rank = 'wide':"),
    ],
)
def test_cli_bad_config_is_one_line_naming_the_key(runner: Any, tmp_path: Any, config: dict[str, Any], message: str) -> None:
    from ffn_cli.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = runner.invoke(app, ["params", "--config", str(path)])
    assert result.exit_code == 2, result.output
    assert message in result.output and result.output.strip().count("\n") == 0
    assert "--head-dim" not in result.output
