"""Whole-model accounting against published parameter totals, and each family's conventions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ffn_cli.accounting import active_params, matmul_flops_per_token, total_params
from ffn_cli.attention import AttentionSpec
from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES, model_spec_from_config
from ffn_cli.configs.files import load_config, load_preset
from ffn_cli.configs.source import config_model, preset_model
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.models.count import count_model, training_memory
from ffn_cli.models.spec import ModelSpec, layer_ranges
from ffn_cli.spec import FFNSpec
from tests.helpers import read_preset_names

CONFIGS = Path(__file__).parent / "data" / "configs"

# Published totals (parameters; active per token for MoE). The first four are the reference
# configs; the others are the counts their checkpoints report (safetensors metadata, or
# sum(p.numel()) of the Hugging Face model), with the source of each below.
PUBLISHED: dict[str, tuple[int, int | None]] = {
    "gpt2": (124_439_808, None),  # GPT2Model; tied head counted once
    "bert-base-uncased": (109_482_240, None),  # BertModel with pooler
    "llama-2-7b": (6_738_415_616, None),
    "mixtral-8x7b": (46_702_792_704, 12_879_925_248),
    "gpt2-medium": (354_823_168, None),  # HF GPT2Model
    "gpt2-large": (774_030_080, None),
    "gpt2-xl": (1_557_611_200, None),
    "bert-base-cased": (108_310_272, None),  # vocab 28,996
    "bert-large-uncased": (335_141_888, None),
    "llama-2-13b": (13_015_864_320, None),
    "llama-2-70b": (68_976_648_192, None),  # GQA, 8 KV heads
    "llama-3-8b": (8_030_261_248, None),  # vocab 128,256, GQA
    "tinyllama-1.1b": (1_100_048_384, None),
    "mistral-7b": (7_241_732_096, None),
    "mixtral-8x22b": (140_620_634_112, 39_152_031_744),  # "141B total, 39B active"
    "qwen2-0.5b": (494_032_768, None),  # tied; q, k, v biased
    "qwen2-1.5b": (1_543_714_304, None),
    "qwen2-7b": (7_615_616_512, None),
    "qwen1.5-moe-a2.7b": (14_315_784_192, 2_689_173_504),  # "14.3B total, 2.7B activated"
    "gemma-2b": (2_506_172_416, None),  # tied, head_dim 256, 1 KV head
    "gemma-7b": (8_537_680_896, None),
    "phi-3-mini-4k": (3_821_079_552, None),  # fused qkv_proj, gate_up_proj
    "phi-3-medium-4k": (13_960_238_080, None),
    "deepseek-moe-16b": (16_375_728_128, 2_828_650_496),  # dense first layer, 2 shared experts
    "olmo-1b": (1_176_764_416, None),  # LayerNorms without parameters, tied
    "olmo-7b": (6_888_095_744, None),
    # The newer families: each total is the safetensors parameter count its Hub page reports,
    # and equals sum(p.numel()) of the transformers model built from the preset (the slow test
    # in test_models_transformers.py rebuilds every one). Active counts include embeddings and head.
    "llama-3.1-8b": (8_030_261_248, None),
    "llama-3.1-70b": (70_553_706_496, None),
    "llama-3.1-405b": (405_853_388_800, None),
    "qwen3-8b": (8_190_735_360, None),  # q/k RMSNorm per head
    "qwen3-30b-a3b": (30_532_122_624, 3_353_032_704),  # "30.5B total, 3.3B activated"
    "gemma-2-9b": (9_241_705_984, None),  # 4 norms per layer
    "gemma-3-1b": (999_885_952, None),
    "gemma-3-4b": (4_300_079_472, None),  # text model + SigLIP tower + projector
    "olmo-2-7b": (7_298_617_344, None),  # q/k norms over the projections, post-norms
    "phi-4": (14_659_507_200, None),
    "phi-2": (2_779_683_840, None),  # parallel block, biased head
    "phi-3.5-moe": (41_873_153_344, 6_640_999_744),  # "42B total, 6.6B active"
    "pythia-1.4b": (1_414_647_808, None),
    "falcon-7b": (6_921_720_704, None),  # multi-query
    "starcoder2-7b": (7_173_923_840, None),
    "granite-3.0-8b": (8_170_848_256, None),
    "granite-3.0-3b-a800m": (3_298_793_472, 882_874_368),
    "deepseek-v2-lite": (15_706_484_224, 2_661_150_208),  # "15.7B total, 2.4B activated" (without the embeddings)
    # transformers holds V3's e_score_correction_bias as a buffer; DeepSeek's own code (and its
    # 671B figure) counts those 58 × 256 values too, and the checkpoint adds one MTP layer.
    "deepseek-v3": (671_026_404_352, 37_552_282_624),
    "gpt-oss-20b": (20_914_757_184, 4_187_440_704),  # "21B, 3.6B active" without the embedding
    "gpt-oss-120b": (116_829_156_672, 5_711_982_912),  # "117B, 5.1B active" without the embedding
    "llama-4-scout": (108_641_793_536, 17_172_894_720),  # "109B total, 17B active": the tower in the total, not the active
    "roberta-base": (124_645_632, None),  # RobertaModel with pooler
    "xlm-roberta-base": (278_043_648, None),
    # The models people size today: the safetensors counts of their Hub pages. Active counts
    # are held exactly against transformers' built experts (test_models_transformers.py); the
    # vendors give them rounded ("22B activated").
    "llama-3.3-70b": (70_553_706_496, None),  # Llama 3.1 70B's architecture
    "qwen3-32b": (32_762_123_264, None),
    "qwen3-235b-a22b": (235_093_634_560, 22_190_763_520),  # "235B total, 22B activated"
    "gemma-3-27b": (27_432_406_640, None),  # text model + SigLIP tower + projector
    "mistral-small-3.1-24b": (24_011_361_280, None),  # text model + Pixtral tower + projector
    # Kimi K2's page gives 1,026,408,232,448: these 60 × 384 more are the routers'
    # e_score_correction_bias, a buffer in transformers (as for DeepSeek-V3 above).
    "kimi-k2": (1_026_408_232_448 - 60 * 384, 32_861_477_888),  # "1T total, 32B activated"
    "smollm3-3b": (3_075_098_624, None),  # tied head
    "seed-oss-36b": (36_151_104_512, None),  # q, k, v biased, o not
    "apertus-8b": (8_053_338_176, None),  # xIELU: two learnable scalars per FFN
}
# Presets whose vendors give only a rounded size: (total, active) in billions as stated, each
# checked by rounding; the exact counts are held against transformers' meta build
# (tests/test_models_transformers.py rebuilds every preset).
STATED: dict[str, tuple[float, float | None, str]] = {
    "glm-4.5-air": (106, 12, "106B total, 12B active: active without the embedding and head"),
    "exaone-4.0-32b": (32.0, None, "32.0B"),
    "glm-4-9b-0414": (9.4, None, "9.4B"),
    "command-r7b": (8.0, None, "8.03B with its 256k-token embedding (the 7B of the name without it)"),
    "dots.llm1": (142, 14, "142B total, 14B activated"),
    "ernie-4.5-21b-a3b": (21.8, 3, "21B total, 3B activated"),
    "hunyuan-a13b": (80, 13, "80B total, 13B active"),
    "qwen3-next-80b-a3b": (80, 3, "80B total, 3B activated: active without the embedding and head"),
    "minimax-m2": (229, 10, "230B total, 10B active: active without the embedding and head"),
    # NVIDIA's Nemotron 3 Nano report (arXiv:2512.20848): 31.6B total, 3.2B active per forward
    # pass without the embeddings, 3.6B with them.
    "nemotron-3-nano-30b-a3b": (31.6, 3.6, "31.6B total, 3.6B active with the embeddings"),
    # Nemotron 3 Super and Ultra (latent MoE), as their names state them; active without the
    # embeddings, the convention of the Nano report above.
    "nemotron-3-super-120b-a12b": (120, 12, "120B total, 12B active: active without the embeddings"),
    "nemotron-3-ultra-550b-a55b": (550, 55, "550B total, 55B active: active without the embeddings"),
    # nvidia/MiniMax-M2.5-NVFP4: MiniMax-M2.5's architecture (M2's: 230B total, 10B active).
    "minimax-m2.5-nvfp4": (229, 10, "230B total, 10B active: active without the embedding and head"),
}


def _read(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _model(config: dict[str, Any]) -> Any:
    return count_model(model_spec_from_config(config))


# --- the reference configs -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "total", "active"),
    [
        ("gpt2", 124_439_808, 124_439_808),
        ("bert-base-uncased", 109_482_240, 109_482_240),
        ("llama-2-7b", 6_738_415_616, 6_738_415_616),
        ("mixtral-8x7b", 46_702_792_704, 12_879_925_248),
    ],
)
def test_reference_totals(name: str, total: int, active: int) -> None:
    m = count_model(config_model(str(CONFIGS / f"{name}.json")))
    assert m.total_params == total
    assert m.active_params == active


@pytest.mark.parametrize(
    ("name", "attention", "ffn", "ffn_active", "ratio", "active_ratio"),
    [
        ("gpt2", 2_362_368, 4_722_432, 4_722_432, 1.999, 1.999),
        ("llama-2-7b", 67_108_864, 135_266_304, 135_266_304, 2.016, 2.016),
        ("mixtral-8x7b", 41_943_040, 1_409_318_912, 352_354_304, 33.60, 8.40),
    ],
)
def test_reference_per_layer_figures(name: str, attention: int, ffn: int, ffn_active: int, ratio: float, active_ratio: float) -> None:
    m = _model(_read(name))
    (layer,) = m.per_layer
    assert (layer["attention_params"], layer["ffn_params"], layer["ffn_active_params"]) == (attention, ffn, ffn_active)
    assert m.ffn_attention_ratio == pytest.approx(ratio, abs=0.005)
    assert m.ffn_active_attention_ratio == pytest.approx(active_ratio, abs=0.005)


def test_presets_copy_the_reference_configs() -> None:
    for name in ("gpt2", "bert-base-uncased", "llama-2-7b", "mixtral-8x7b"):
        preset = {k: v for k, v in load_preset(name).items() if k != "_name_or_path"}
        assert preset == _read(name)


# --- every preset --------------------------------------------------------------------------


# Presets with no published total on hand: their counts are held against transformers' meta
# build alone (tests/test_models_transformers.py, tests/test_fallback.py).
# Gemma 3n's presets are its text model, whose size Google states only with the vision and
# audio towers ("8B raw" for E4B).
META_ONLY = {"lfm2-1.2b", "lfm2-8b-a1b", "granite-4.0-h-tiny", "nemotron-h-8b", "gemma-3n-e4b", "gemma-3n-e2b"}


def test_every_preset_has_a_published_total() -> None:
    assert set(read_preset_names()) == set(PUBLISHED) | set(STATED) | META_ONLY
    assert not set(PUBLISHED) & set(STATED) and not (set(PUBLISHED) | set(STATED)) & META_ONLY


@pytest.mark.parametrize("name", sorted(STATED))
def test_preset_matches_its_stated_size(name: str) -> None:
    # Vendors round or truncate: the count lies within one unit of the last digit stated.
    total, active, how = STATED[name]
    m = count_model(preset_model(name))
    unit = 1 if float(total).is_integer() else 0.1
    assert abs(m.total_params / 1e9 - total) < unit
    if active is not None:
        shown = m.active_params
        if "without the embedding and head" in how:
            shown -= m.embedding_params + sum(p.params for p in m.parts if p.kind == "head")
        elif "without the embeddings" in how:
            shown -= m.embedding_params
        assert abs(shown / 1e9 - active) < 1


# Kin of a family with a preset, checked on small configs against transformers
# (tests/test_models_transformers.py) rather than against a published checkpoint.
KIN_WITHOUT_PRESET = {"ministral", "olmo3", "granitemoeshared", "llama4_text"}


def test_presets_cover_every_supported_family() -> None:
    assert {load_preset(n)["model_type"] for n in read_preset_names()} == set(SUPPORTED_MODEL_TYPES) - KIN_WITHOUT_PRESET


def _built_params(spec: FFNSpec) -> int:
    from ffn_cli import build_ffn

    return sum(p.numel() for p in build_ffn(spec, device="meta").parameters())


@pytest.mark.parametrize("name", sorted(set(PUBLISHED) | set(STATED)))
def test_parts_sum_to_the_totals_and_ffn_parts_are_the_built_modules(name: str) -> None:
    m = count_model(preset_model(name))
    assert sum(p.params for p in m.parts) == m.total_params
    assert (
        m.ffn_params
        + m.attention_params
        + m.embedding_params
        + m.norm_params
        + sum(p.params for p in m.parts if p.kind in ("head", "pooler"))
        + m.vision_params
        == m.total_params
    )
    s = m.spec
    # The FFN parts from the built modules (one layer of each kind, on meta), not the accounting;
    # gpt-oss's router bias (ERNIE's score correction) is the one MoE tensor beside them: E per layer.
    expected = len(s.dense_layers) * (_built_params(s.dense_ffn) if s.dense_ffn else 0)
    expected += len(s.moe_layers) * (_built_params(s.moe_ffn) + (s.moe_ffn.experts if s.moe_extra else 0) if s.moe_ffn else 0)
    assert m.ffn_params == expected
    # A hybrid's mixer layers (Qwen3-Next's Gated DeltaNet) replace attention in theirs; a
    # Nemotron-H layer may hold an FFN alone.
    mixer = s.mixer
    mixed = len(mixer.layers) if mixer else 0
    extra = sum(t.count for t in s.attention_extra)
    assert m.attention_params == len(s.attention_layers) * (s.attention.params + extra) + (mixed * mixer.params if mixer else 0)


def test_dense_forward_flops_are_twice_the_matmul_parameters() -> None:
    # No biases in LLaMA: every matmul parameter costs 2 FLOPs per token; the head runs too.
    m = count_model(preset_model("llama-2-7b"))
    assert m.matmul_flops_per_token == 2 * (m.attention_params + m.ffn_params) + 2 * 4096 * 32000
    moe = count_model(preset_model("mixtral-8x7b"))
    per_layer = moe.spec.attention.projection_flops_per_token() + matmul_flops_per_token(moe.spec.moe_ffn)  # type: ignore[arg-type]
    assert moe.matmul_flops_per_token == 32 * per_layer + 2 * 4096 * 32000


# --- conventions by family -------------------------------------------------------------------


def _llama_like(model_type: str, **extra: Any) -> dict[str, Any]:
    base = {
        "model_type": model_type,
        "hidden_size": 64,
        "intermediate_size": 160,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "vocab_size": 100,
    }
    return {**base, **extra}


def test_tied_head_adds_nothing_and_untied_adds_vocab_by_d() -> None:
    tied = _model(_llama_like("llama", tie_word_embeddings=True))
    untied = _model(_llama_like("llama"))
    assert untied.total_params - tied.total_params == 100 * 64
    assert [p.params for p in tied.parts if p.kind == "head"] == [0]


def test_gemma_ties_by_default_and_uses_head_dim_256() -> None:
    m = _model(_llama_like("gemma", num_key_value_heads=1))
    assert m.spec.tie_word_embeddings
    a = m.spec.attention
    assert (a.head_dim, a.q_dim, a.kv_dim) == (256, 1024, 256)
    assert m.spec.dense_ffn is not None and m.spec.dense_ffn.variant == "geglu"


def test_qwen2_biases_q_k_v_but_not_o() -> None:
    a = model_spec_from_config(_llama_like("qwen2")).attention
    assert (a.qkv_bias, a.o_bias) == (True, False)
    assert a.params == 4 * 64 * 64 + 3 * 64
    real = preset_model("qwen2-0.5b").attention
    assert real.params == 896 * 896 + 896 + 2 * (128 * 896 + 128) + 896 * 896  # 14 heads, 2 KV heads of 64


def test_llama_attention_bias_and_mlp_bias_flags() -> None:
    plain = _model(_llama_like("llama"))
    biased = _model(_llama_like("llama", attention_bias=True, mlp_bias=True))
    assert biased.attention_params - plain.attention_params == 4 * (4 * 64)
    assert biased.ffn_params - plain.ffn_params == 4 * (2 * 160 + 64)


def test_olmo_norms_have_no_parameters() -> None:
    m = _model(_llama_like("olmo"))
    assert m.norm_params == 0
    assert all(p.params == 0 for p in m.parts if p.kind == "norm")
    assert _model(_llama_like("llama")).norm_params == (2 * 4 + 1) * 64


def test_phi3_fuses_qkv_and_gate_up_with_the_same_count() -> None:
    phi3, llama = model_spec_from_config(_llama_like("phi3")), model_spec_from_config(_llama_like("llama"))
    assert phi3.fused_qkv and phi3.dense_ffn is not None and phi3.dense_ffn.fused_gate_up
    assert count_model(phi3).total_params == count_model(llama).total_params


def test_gpt2_n_inner_and_learned_positions() -> None:
    config = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 32, "vocab_size": 100}
    default = _model(config)
    assert default.spec.dense_ffn is not None and default.spec.dense_ffn.hidden == 256
    wide = _model({**config, "n_inner": 512})
    assert wide.ffn_params - default.ffn_params == 2 * (2 * 64 * 256 + 256)
    assert [p.params for p in default.parts if p.name == "position embeddings"] == [32 * 64]


def test_bert_has_token_types_an_embedding_norm_and_a_pooler_but_no_head() -> None:
    m = _model(_read("bert-base-uncased"))
    names = {p.name: p.params for p in m.parts}
    assert names["token-type embeddings"] == 2 * 768
    assert names["embedding norm"] == 2 * 768
    assert names["pooler"] == 768 * 768 + 768
    assert "LM head" not in names and "final norm" not in names
    assert m.total_params - names["pooler"] == 108_891_648  # BertModel(add_pooling_layer=False)


def test_mixtral_routes_every_layer() -> None:
    s = model_spec_from_config(_read("mixtral-8x7b"))
    assert s.moe_layers == tuple(range(32)) and s.dense_ffn is None
    assert s.moe_ffn is not None and (s.moe_ffn.experts, s.moe_ffn.top_k, s.moe_ffn.normalize_top_k) == (8, 2, True)


def test_deepseek_dense_first_layers_and_layer_frequency() -> None:
    config = _llama_like(
        "deepseek",
        num_hidden_layers=6,
        n_routed_experts=8,
        n_shared_experts=2,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        first_k_dense_replace=1,
        moe_layer_freq=2,
    )
    s = model_spec_from_config(config)
    assert s.moe_layers == (2, 4) and s.dense_layers == (0, 1, 3, 5)
    assert s.moe_ffn is not None and s.moe_ffn.shared_hidden == 64  # moe_intermediate_size × n_shared_experts
    dense_only = model_spec_from_config({**config, "n_routed_experts": None})
    assert dense_only.moe_layers == () and dense_only.moe_ffn is None


def test_qwen2_moe_sparse_step_mlp_only_layers_and_shared_expert_gate() -> None:
    config = _llama_like(
        "qwen2_moe",
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=48,
        decoder_sparse_step=2,
        mlp_only_layers=[3],
    )
    s = model_spec_from_config(config)
    assert s.moe_layers == (1,) and s.dense_layers == (0, 2, 3)
    moe = s.moe_ffn
    assert moe is not None and moe.shared_hidden == 48 and moe.shared_expert_gate
    # router + 4 experts + one shared expert + its 1-wide sigmoid gate
    assert total_params(moe) == 4 * 64 + 4 * 3 * 64 * 16 + 3 * 64 * 48 + 64
    assert active_params(moe) == 4 * 64 + 2 * 3 * 64 * 16 + 3 * 64 * 48 + 64


def test_layer_ranges() -> None:
    assert layer_ranges((0,)) == "0"
    assert layer_ranges((1, 2, 3, 7, 9, 10)) == "1–3, 7, 9–10"
    assert layer_ranges(()) == ""
    # DeepSeek-V4-Pro's HCA layers: two adjacent, then every other one to 59
    assert layer_ranges((0, 1, *range(3, 60, 2))) == "0–1, 3, 5, …, 59"
    assert layer_ranges((1, 3, 5, 7, 8, 9)) == "1, 3, 5, 7–9"  # too short a series to fold
    assert layer_ranges((0, 2, 4, 6, 8, 10, 11, 12)) == "0, 2, …, 8, 10–12"  # a range takes its first layer from the series
    assert layer_ranges((0, 2, 4, 6, 8, 9, 10)) == "0, 2, 4, 6, 8–10"  # what is left of the series too short to fold


def test_training_memory_is_16_bytes_per_parameter_with_adam() -> None:
    for dtype in ("bfloat16", "float16", "float32"):
        t = training_memory(1000, dtype)
        assert t.total_bytes == 16_000, dtype
    bf16 = training_memory(10, "bfloat16")
    assert (bf16.weights_bytes, bf16.grads_bytes, bf16.master_bytes, bf16.optimizer_bytes) == (20, 20, 40, 80)
    assert training_memory(10, "float64").master_bytes == 0
    with pytest.raises(FFNError):
        training_memory(10, "int3")


def test_weight_bytes_per_dtype() -> None:
    m = count_model(preset_model("llama-2-7b"))
    assert m.weight_bytes("bfloat16") == 2 * 6_738_415_616
    assert m.weight_bytes("float32") == 4 * 6_738_415_616


# --- validation and errors -------------------------------------------------------------------


def test_model_spec_rejects_inconsistent_layers() -> None:
    attention = AttentionSpec(64)
    dense = FFNSpec(variant="swiglu", d_model=64)
    with pytest.raises(FFNError, match="moe_layers"):
        ModelSpec("m", "llama", 64, 2, 100, attention, dense_ffn=dense, moe_ffn=FFNSpec(variant="moe", d_model=64), moe_layers=(5,))
    with pytest.raises(FFNError, match="dense_ffn"):
        ModelSpec("m", "llama", 64, 2, 100, attention)
    with pytest.raises(FFNError, match="must not be a mixture"):
        ModelSpec("m", "llama", 64, 2, 100, attention, dense_ffn=FFNSpec(variant="moe", d_model=64))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"text"', "must be a JSON object"),
        ('{"hidden_size": 64}', "has no 'model_type'"),
        ('{"model_type": "t5"}', "model_type='t5' is invalid: supported: llama"),
        ('{"model_type": ["llama"]}', "model_type=['llama'] is invalid: supported: llama"),
        ('{"model_type": "deepseek", "hidden_size": 64}', "missing key 'num_hidden_layers'"),
        (json.dumps(_llama_like("llama", hidden_size="64")), "hidden_size='64' is invalid"),
        (json.dumps(_llama_like("llama", hidden_size=0)), "hidden_size=0 is invalid"),
        (json.dumps(_llama_like("llama", hidden_act=5)), "hidden_act=5 is invalid"),
        (json.dumps(_llama_like("llama", tie_word_embeddings="yes")), "tie_word_embeddings='yes' is invalid"),
        (json.dumps(_llama_like("llama", num_key_value_heads=3)), "num_key_value_heads=3 is invalid"),
        (json.dumps(_llama_like("llama", num_attention_heads=5)), "must divide hidden_size (64), or the config must give head_dim"),
        (json.dumps(_llama_like("gemma3", text_config=[])), "text_config=[] is invalid"),
        (json.dumps(_llama_like("llama4", text_config={"model_type": "t5"})), "text_config.model_type='t5' is invalid"),
        (json.dumps(_llama_like("llama4_text", moe_layers=[0, 9])), "moe_layers=[0, 9] is invalid"),
        (json.dumps(_llama_like("deepseek_v3", kv_lora_rank=0)), "kv_lora_rank=0 is invalid"),
        (
            json.dumps(_llama_like("gpt_oss", num_key_value_heads=4, num_local_experts=2, num_experts_per_tok=4)),
            "num_experts_per_tok=4 is invalid",
        ),
        (json.dumps(_llama_like("qwen2_moe", mlp_only_layers="all")), "mlp_only_layers='all' is invalid"),
        (
            json.dumps({**load_preset("roberta-base"), "pad_token_id": 513}),
            "pad_token_id=513 is invalid: leaves no position rows of the 514",
        ),
    ],
)
def test_bad_configs_raise_one_line_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(FFNError) as info:
        config_model(str(path))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_directory_and_unknown_preset(tmp_path: Path) -> None:
    with pytest.raises(FFNError, match="no such file"):
        load_config(tmp_path / "absent.json")
    with pytest.raises(FFNError, match=r"directory without a config\.json"):
        load_config(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(_read("gpt2")))
    assert load_config(tmp_path)["model_type"] == "gpt2"  # a model directory works
    with pytest.raises(FFNError, match="no such preset; did you mean gpt2"):
        load_preset("gpt5")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(FFNError, match="not UTF-8"):
        load_config(tmp_path / "binary.json")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_config_is_a_runtime_error(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("{}")
    path.chmod(0)
    try:
        with pytest.raises(FFNRuntimeError, match="cannot read config"):
            load_config(path)
    finally:
        path.chmod(0o600)
