"""Every family `ffn params --config` reads, held against the model transformers builds from
the same config on the meta device: the total, each part where module names allow, the MoE
active count (from the built experts), and the config classes' defaults."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ffn_cli.models import SUPPORTED_MODEL_TYPES, count_model, load_preset, model_spec_from_config, preset_names
from ffn_cli.models.defaults import DEFAULTS

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

# Families transformers cannot build: DeepSeek-MoE v1 is remote code (its preset keeps a published total).
NOT_IN_TRANSFORMERS = {"deepseek"}
ENCODERS = {"bert", "roberta", "xlm-roberta"}
WRAPPERS = {"gemma3", "llama4", "mistral3"}

_SMALL: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 101,
}
_MOE = {"num_local_experts": 4, "num_experts_per_tok": 2}
_MLA = {"kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 12, "v_head_dim": 10, "moe_intermediate_size": 24}

# (model_type, keys over _SMALL): several per family where a key changes the layout.
SMALL_CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("llama", {}),
    ("llama", {"attention_bias": True, "mlp_bias": True, "head_dim": 24, "tie_word_embeddings": True}),
    ("mistral", {"head_dim": 32}),
    ("ministral", {"head_dim": 16}),
    ("mixtral", _MOE),
    ("qwen2", {"tie_word_embeddings": True}),
    ("qwen2_moe", {"num_experts": 4, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48, "decoder_sparse_step": 2, "mlp_only_layers": [2]}),
    ("qwen2_moe", {"num_experts": 4, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 0}),
    ("qwen3", {"head_dim": 24}),
    ("qwen3", {"attention_bias": True}),
    ("qwen3_moe", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "head_dim": 32, "mlp_only_layers": [0]}),
    ("gemma", {"head_dim": 32}),
    ("gemma2", {"head_dim": 32, "hidden_activation": "gelu_pytorch_tanh"}),
    ("gemma3_text", {"head_dim": 32}),
    ("olmo", {}),
    ("olmo2", {}),
    ("olmo3", {}),
    ("granite", {"tie_word_embeddings": True, "attention_bias": True}),
    ("granitemoe", _MOE),
    ("granitemoeshared", {**_MOE, "shared_intermediate_size": 40}),
    ("phi", {"partial_rotary_factor": 0.5}),
    ("phi", {"qk_layernorm": True, "tie_word_embeddings": True}),
    ("phi3", {"vocab_size": 32064, "hidden_size": 32, "intermediate_size": 48}),
    ("phimoe", {**_MOE, "attention_bias": True, "lm_head_bias": True}),
    ("gpt_neox", {"num_key_value_heads": None}),
    ("gpt_neox", {"num_key_value_heads": None, "attention_bias": False, "use_parallel_residual": False}),
    ("falcon", {"num_key_value_heads": None}),
    ("falcon", {"num_key_value_heads": None, "new_decoder_architecture": True, "num_kv_heads": 2, "bias": True}),
    ("falcon", {"num_key_value_heads": None, "multi_query": False, "parallel_attn": False, "ffn_hidden_size": 80}),
    ("falcon", {"num_key_value_heads": None, "new_decoder_architecture": True, "num_ln_in_parallel_attn": 1}),
    ("starcoder2", {}),
    ("starcoder2", {"use_bias": False, "tie_word_embeddings": False}),
    ("deepseek_v2", {**_MLA, "n_routed_experts": 4, "n_shared_experts": 2, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "q_lora_rank": None}),
    ("deepseek_v2", {**_MLA, "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2, "q_lora_rank": 20, "attention_bias": True}),
    ("deepseek_v3", {**_MLA, "n_routed_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "q_lora_rank": 20, "n_group": 4, "topk_group": 2}),
    ("gpt_oss", {**_MOE, "head_dim": 16}),
    ("llama4_text", {**_MOE, "num_experts_per_tok": 1, "intermediate_size_mlp": 80, "interleave_moe_layer_step": 2, "head_dim": 16}),
    ("llama4_text", {**_MOE, "moe_layers": [0, 2], "intermediate_size_mlp": 80, "head_dim": 16}),
    ("gpt2", {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 32, "vocab_size": 101}),
    ("gpt2", {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 32, "vocab_size": 101}),
    ("gpt2", {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 32, "add_cross_attention": True, "n_inner": 80, "vocab_size": 101}),
    ("bert", {"num_key_value_heads": None, "max_position_embeddings": 40}),
    ("roberta", {"num_key_value_heads": None, "max_position_embeddings": 40, "type_vocab_size": 1}),
    ("xlm-roberta", {"num_key_value_heads": None, "max_position_embeddings": 40}),
    ("llama", {"hidden_act": "quick_gelu"}),
    ("gpt2", {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 32, "activation_function": "quick_gelu", "vocab_size": 101}),
]
_TEXT = {k: v for k, v in _SMALL.items()} | {"head_dim": 16}
SMALL_WRAPPERS: list[tuple[str, dict[str, Any]]] = [
    (
        "gemma3",
        {
            "text_config": {**_TEXT, "model_type": "gemma3_text"},
            "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
                              "num_attention_heads": 4, "image_size": 32, "patch_size": 8, "vision_use_head": False},
            "mm_tokens_per_image": 4,
        },
    ),
    (
        "llama4",
        {
            "text_config": {**_TEXT, **_MOE, "num_experts_per_tok": 1, "intermediate_size_mlp": 80, "interleave_moe_layer_step": 2},
            "vision_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": 32,
                              "patch_size": 8, "projector_input_dim": 40, "projector_output_dim": 40, "vision_output_dim": 40},
        },
    ),
    (
        "mistral3",
        {
            "text_config": {**_TEXT, "model_type": "mistral"},
            "vision_config": {"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
                              "num_attention_heads": 4, "head_dim": 8, "image_size": 32, "patch_size": 8},
            "tie_word_embeddings": False,
            "multimodal_projector_bias": True,
        },
    ),
]


def _config(model_type: str, keys: dict[str, Any]) -> dict[str, Any]:
    base = {} if model_type in WRAPPERS or model_type == "gpt2" else dict(_SMALL)
    return {k: v for k, v in {**base, **keys, "model_type": model_type}.items() if v is not None}


def _build(config: dict[str, Any]) -> Any:
    cfg = transformers.AutoConfig.for_model(**config)
    auto = transformers.AutoModel if config["model_type"] in ENCODERS else (
        transformers.AutoModelForImageTextToText if config["model_type"] in WRAPPERS else transformers.AutoModelForCausalLM
    )
    with torch.device("meta"):
        return auto.from_config(cfg)


_KIND_RULES: list[tuple[str, str]] = [
    (r"(vision_tower|vision_model|multi_modal_projector)\.", "vision"),
    (r"(^|\.)(lm_head|embed_out)\.", "head"),
    (r"(^|\.)pooler\.", "pooler"),
    (r"(embed_tokens|embed_in|word_embeddings|position_embeddings|token_type_embeddings|wte|wpe)\.weight$", "embedding"),
    (r"\.LayerNorm\.|(^|\.)(ln_\w+|ln_f|\w*layernorm|\w*layer_norm|norm)\.(weight|bias)$", "norm"),
    (r"\.(self_attn|attn|crossattention|attention|self_attention)\.", "attention"),
    (r"\.(mlp|feed_forward|block_sparse_moe|shared_mlp|intermediate|output)\.", "ffn"),
]


def _kind(name: str) -> str:
    # A norm inside the attention module (q_norm, kv_a_layernorm) belongs to the attention.
    if re.search(r"\.(self_attn|attention|self_attention)\.\w*(norm|layernorm)\.", name) and ".output.LayerNorm." not in name:
        return "attention"
    for pattern, kind in _KIND_RULES:
        if re.search(pattern, name):
            return kind
    raise AssertionError(f"no part for {name}")


def _parts(model: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, p in model.named_parameters():
        kind = _kind(name)
        out[kind] = out.get(kind, 0) + p.numel()
    return out


def _ours(model: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in model.parts:
        if part.params:
            out[part.kind] = out.get(part.kind, 0) + part.params
    return out


def _experts_active(model: Any, config: dict[str, Any], ours: Any) -> int:
    """The active count from the built model: total minus the routed experts a token skips,
    E − k of every MoE layer's experts module, its parameters split evenly over E."""
    spec = ours.spec
    skipped = 0
    for name, module in model.named_modules():
        if name.endswith(".experts") and not name.endswith("shared_experts"):
            count = sum(p.numel() for p in module.parameters())
            experts, k = spec.moe_ffn.experts, spec.moe_ffn.top_k
            skipped += count // experts * (experts - k)
    return sum(p.numel() for p in model.parameters()) - skipped


CASES = [(t, k) for t, k in SMALL_CONFIGS] + SMALL_WRAPPERS


def test_the_small_configs_cover_every_family() -> None:
    assert {t for t, _ in CASES} == set(SUPPORTED_MODEL_TYPES) - NOT_IN_TRANSFORMERS


@pytest.mark.parametrize(("model_type", "keys"), CASES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CASES)])
def test_total_and_parts_equal_transformers(model_type: str, keys: dict[str, Any]) -> None:
    config = _config(model_type, keys)
    model = _build(config)
    ours = count_model(model_spec_from_config(config))
    assert ours.total_params == sum(p.numel() for p in model.parameters())
    assert _ours(ours) == _parts(model)
    if ours.spec.is_moe:
        assert ours.active_params == _experts_active(model, config, ours)


@pytest.mark.parametrize("model_type", sorted(set(DEFAULTS) - NOT_IN_TRANSFORMERS))
def test_defaults_are_the_config_class_defaults(model_type: str) -> None:
    cfg = transformers.AutoConfig.for_model(model_type)
    for key, value in DEFAULTS[model_type].items():
        # A key the class lacks (Mistral's attention_bias) is one its modelling code never reads.
        if key not in ("attention_bias", "mlp_bias", "hidden_act") or hasattr(cfg, key):
            assert getattr(cfg, key) == value, key


@pytest.mark.parametrize("model_type", ["llama", "mistral", "qwen2", "gemma", "olmo", "gpt2", "bert", "phi"])
def test_an_empty_config_counts_as_the_class_defaults(model_type: str) -> None:
    model = _build({"model_type": model_type})
    assert count_model(model_spec_from_config({"model_type": model_type})).total_params == sum(p.numel() for p in model.parameters())


@pytest.mark.slow
@pytest.mark.parametrize("name", preset_names())
def test_every_full_size_preset_equals_transformers(name: str) -> None:
    config = {k: v for k, v in load_preset(name).items() if not k.startswith("_")}
    if config["model_type"] in NOT_IN_TRANSFORMERS:
        pytest.skip("remote code")
    model = _build(config)
    ours = count_model(model_spec_from_config(config))
    assert ours.total_params == sum(p.numel() for p in model.parameters())
    if ours.spec.is_moe:
        assert ours.active_params == _experts_active(model, config, ours)
