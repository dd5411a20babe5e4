"""Small configs of every family, each switching a layout key: built by transformers in
tests/test_models_transformers.py, mutated by the fuzz test in tests/test_models_families.py."""

from __future__ import annotations

from typing import Any

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
    (
        "qwen2_moe",
        {
            "num_experts": 4,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 48,
            "decoder_sparse_step": 2,
            "mlp_only_layers": [2],
        },
    ),
    ("qwen2_moe", {"num_experts": 4, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 0}),
    ("qwen3", {"head_dim": 24}),
    ("qwen3", {"attention_bias": True}),
    ("qwen3_moe", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "head_dim": 32, "mlp_only_layers": [0]}),
    ("gemma", {"head_dim": 32}),
    ("gemma2", {"head_dim": 32, "hidden_activation": "gelu_pytorch_tanh"}),
    ("gemma3_text", {"head_dim": 32}),
    ("olmo", {"head_dim": 24}),
    ("olmo2", {}),
    ("olmo3", {}),
    ("granite", {"tie_word_embeddings": True, "attention_bias": True}),
    ("granitemoe", _MOE),
    ("granitemoeshared", {**_MOE, "shared_intermediate_size": 40}),
    ("phi", {"partial_rotary_factor": 0.5, "head_dim": 24}),
    ("phi", {"qk_layernorm": True, "tie_word_embeddings": True}),
    ("phi3", {"vocab_size": 32064, "hidden_size": 32, "intermediate_size": 48}),
    ("phimoe", {**_MOE, "attention_bias": True, "lm_head_bias": True}),
    ("gpt_neox", {"num_key_value_heads": None, "head_dim": 24}),
    ("gpt_neox", {"num_key_value_heads": None, "attention_bias": False, "use_parallel_residual": False}),
    ("falcon", {"num_key_value_heads": None}),
    ("falcon", {"num_key_value_heads": None, "new_decoder_architecture": True, "num_kv_heads": 2, "bias": True}),
    ("falcon", {"num_key_value_heads": None, "multi_query": False, "parallel_attn": False, "ffn_hidden_size": 80}),
    ("falcon", {"num_key_value_heads": None, "new_decoder_architecture": True, "num_ln_in_parallel_attn": 1}),
    ("starcoder2", {"head_dim": 24}),
    ("starcoder2", {"use_bias": False, "tie_word_embeddings": False}),
    (
        "deepseek_v2",
        {**_MLA, "n_routed_experts": 4, "n_shared_experts": 2, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "q_lora_rank": None},
    ),
    (
        "deepseek_v2",
        {
            **_MLA,
            "n_routed_experts": 4,
            "n_shared_experts": 1,
            "num_experts_per_tok": 2,
            "q_lora_rank": 20,
            "attention_bias": True,
            "mlp_bias": True,
            "first_k_dense_replace": 1,
        },
    ),
    (
        "deepseek_v3",
        {
            **_MLA,
            "n_routed_experts": 8,
            "num_experts_per_tok": 2,
            "first_k_dense_replace": 1,
            "q_lora_rank": 20,
            "n_group": 4,
            "topk_group": 2,
        },
    ),
    ("gpt_oss", {**_MOE, "head_dim": 16}),
    ("llama4_text", {**_MOE, "num_experts_per_tok": 1, "intermediate_size_mlp": 80, "interleave_moe_layer_step": 2, "head_dim": 16}),
    ("llama4_text", {**_MOE, "moe_layers": [0, 2], "intermediate_size_mlp": 80, "head_dim": 16}),
    ("gpt2", {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 32, "vocab_size": 101}),
    ("gpt2", {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 32, "vocab_size": 101}),
    ("gpt2", {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 32, "add_cross_attention": True, "n_inner": 80, "vocab_size": 101}),
    ("bert", {"num_key_value_heads": None, "max_position_embeddings": 40}),
    ("roberta", {"num_key_value_heads": None, "max_position_embeddings": 40, "type_vocab_size": 1}),
    ("xlm-roberta", {"num_key_value_heads": None, "max_position_embeddings": 40}),
    # The families of 2025.
    ("smollm3", {"head_dim": 24}),
    ("smollm3", {"attention_bias": True, "mlp_bias": True, "tie_word_embeddings": False}),
    ("seed_oss", {"head_dim": 24}),
    ("seed_oss", {"head_dim": 16, "attention_bias": False, "attention_out_bias": True, "mlp_bias": True}),
    ("exaone4", {"head_dim": 24}),
    ("exaone4", {"tie_word_embeddings": True, "sliding_window": 8, "sliding_window_pattern": 2}),
    ("glm4", {"head_dim": 24}),
    ("glm4", {"attention_bias": False, "tie_word_embeddings": True}),
    ("apertus", {"head_dim": 24}),
    ("apertus", {"attention_bias": True, "hidden_act": "silu"}),
    ("cohere2", {"head_dim": 24}),
    ("cohere2", {"attention_bias": True, "tie_word_embeddings": False}),
    ("glm4_moe", {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 24, "head_dim": 24}),
    (
        "glm4_moe",
        {
            "n_routed_experts": 8,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 24,
            "n_shared_experts": 2,
            "first_k_dense_replace": 0,
            "use_qk_norm": True,
            "attention_bias": True,
            "n_group": 2,
            "topk_group": 1,
            "routed_scaling_factor": 2.5,
        },
    ),
    (
        "dots1",
        {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 24, "n_shared_experts": 1, "first_k_dense_replace": 1},
    ),
    (
        "dots1",
        {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 24, "n_shared_experts": 2, "attention_bias": True},
    ),
    ("ernie4_5_moe", {"moe_num_experts": 4, "moe_k": 2, "moe_intermediate_size": 24, "moe_layer_end_index": 2}),
    (
        "ernie4_5_moe",
        {
            "moe_num_experts": 4,
            "moe_k": 2,
            "moe_intermediate_size": 24,
            "moe_num_shared_experts": 1,
            "moe_layer_start_index": 0,
            "moe_layer_end_index": 2,
            "moe_layer_interval": 2,
            "use_bias": True,
            "tie_word_embeddings": False,
        },
    ),
    (
        "ernie4_5_moe",
        {"moe_num_experts": 4, "moe_k": 2, "moe_intermediate_size": 24, "moe_num_shared_experts": 0, "moe_layer_end_index": 2},
    ),
    ("hunyuan_v1_moe", {"num_experts": 4, "moe_topk": 2, "head_dim": 16}),
    ("hunyuan_v1_moe", {"num_experts": 4, "moe_topk": [2, 2, 2], "head_dim": 24}),
    ("minimax_m2", {"num_local_experts": 4, "num_experts_per_tok": 2, "head_dim": 24}),
    ("minimax_m2", {"num_local_experts": 4, "num_experts_per_tok": 1, "head_dim": 16, "tie_word_embeddings": True}),
    (
        "qwen3_next",
        {
            "num_hidden_layers": 4,
            "head_dim": 16,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 24,
            "shared_expert_intermediate_size": 40,
            "linear_num_key_heads": 2,
            "linear_key_head_dim": 16,
            "linear_num_value_heads": 4,
            "linear_value_head_dim": 8,
            "linear_conv_kernel_dim": 3,
        },
    ),
    (
        "qwen3_next",
        {
            "layer_types": ["full_attention", "linear_attention", "linear_attention"],
            "head_dim": 24,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 24,
            "shared_expert_intermediate_size": 0,
            "mlp_only_layers": [1],
            "attention_bias": True,
            "linear_num_key_heads": 2,
            "linear_key_head_dim": 8,
            "linear_num_value_heads": 2,
            "linear_value_head_dim": 8,
        },
    ),
    ("lfm2", {"layer_types": ["conv", "full_attention", "conv"]}),
    (
        "lfm2",
        {
            "full_attn_idxs": [1],
            "head_dim": 24,
            "conv_bias": True,
            "conv_L_cache": 4,
            "tie_embedding": False,
            "block_ff_dim": 200,
            "block_ffn_dim_multiplier": 1.5,
            "block_multiple_of": 32,
        },
    ),
    ("lfm2", {"block_auto_adjust_ff_dim": False, "num_hidden_layers": 2}),
    (
        "lfm2_moe",
        {
            "layer_types": ["conv", "full_attention", "conv"],
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 24,
            "num_dense_layers": 1,
        },
    ),
    (
        "lfm2_moe",
        {
            "layer_types": ["full_attention", "conv", "conv"],
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 24,
            "num_dense_layers": 0,
            "use_expert_bias": False,
            "conv_bias": True,
            "tie_embedding": False,
            "head_dim": 24,
            "routed_scaling_factor": 2.0,
        },
    ),
    (
        "granitemoehybrid",
        {
            "layer_types": ["mamba", "attention", "mamba"],
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "shared_intermediate_size": 40,
            "mamba_n_heads": 8,
            "mamba_d_state": 16,
            "mamba_n_groups": 2,
            "mamba_chunk_size": 8,
        },
    ),
    (
        "granitemoehybrid",
        {
            "layers_block_type": ["attention", "mamba", "mamba"],
            "num_local_experts": 0,
            "shared_intermediate_size": 80,
            "mamba_n_heads": 4,
            "mamba_d_head": 32,
            "mamba_d_state": 8,
            "mamba_d_conv": 3,
            "mamba_conv_bias": False,
            "mamba_proj_bias": True,
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
    ),
    (
        "nemotron_h",
        {
            "hybrid_override_pattern": "M-*EM-",  # six layers: num_hidden_layers (3) is not read
            "head_dim": 16,
            "mamba_num_heads": 8,
            "mamba_head_dim": 16,
            "n_groups": 2,
            "ssm_state_size": 16,
            "chunk_size": 8,
            "n_routed_experts": 4,
            "moe_intermediate_size": 24,
            "moe_shared_expert_intermediate_size": 40,
        },
    ),
    (
        "nemotron_h",
        {
            "layers_block_type": ["mamba", "attention", "moe", "mlp"],  # the names before the class renamed them
            "num_key_value_heads": 4,
            "mamba_num_heads": 4,
            "mamba_head_dim": 8,
            "mamba_n_groups": 1,
            "ssm_state_size": 8,
            "mamba_d_conv": 3,
            "mamba_conv_bias": False,
            "mamba_chunk_size": 8,
            "use_bias": True,
            "mlp_bias": True,
            "n_routed_experts": 4,
            "moe_intermediate_size": 24,
            "moe_shared_expert_intermediate_size": 0,  # the shared MLP takes intermediate_size
            "tie_word_embeddings": True,  # the class ties nothing
        },
    ),
    (
        "nemotron_h",
        {
            "head_dim": 8,
            "mamba_num_heads": 4,
            "mamba_head_dim": 16,
            "n_groups": 4,
            "ssm_state_size": 8,
            "num_local_experts": 8,
            "num_experts_per_tok": 3,
            "n_group": 2,
            "topk_group": 1,
            "routed_scaling_factor": 2.5,
            "moe_intermediate_size": 16,
            "moe_shared_expert_intermediate_size": 32,
            "mlp_hidden_act": "silu",
        },
    ),
    (
        "gemma3n_text",
        {
            "head_dim": 16,
            "num_hidden_layers": 4,
            "intermediate_size": [96, 128, 96, 128],  # a width a layer, as MatFormer slices have
            "num_kv_shared_layers": 2,
            "layer_types": ["sliding_attention", "full_attention"] * 2,
            "activation_sparsity_pattern": [0.95, 0.0, 0.0, 0.0],
            "vocab_size_per_layer_input": 128,
            "hidden_size_per_layer_input": 8,
            "laurel_rank": 4,
            "altup_num_inputs": 3,
        },
    ),
    (
        "gemma3n_text",
        {
            "head_dim": 24,
            "intermediate_size": [80, 80, 80],
            "num_kv_shared_layers": 0,
            "attention_bias": True,
            "tie_word_embeddings": False,
            "vocab_size_per_layer_input": 64,
            "hidden_size_per_layer_input": 4,
            "laurel_rank": 2,
            "altup_num_inputs": 1,
        },
    ),
    ("llama", {"hidden_act": "quick_gelu"}),
    ("gpt2", {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 32, "activation_function": "quick_gelu", "vocab_size": 101}),
]
_TEXT = {k: v for k, v in _SMALL.items()} | {"head_dim": 16}
SMALL_WRAPPERS: list[tuple[str, dict[str, Any]]] = [
    (
        "gemma3",
        {
            "text_config": {**_TEXT, "model_type": "gemma3_text"},
            "vision_config": {
                "model_type": "siglip_vision_model",
                "hidden_size": 32,
                "intermediate_size": 48,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "image_size": 32,
                "patch_size": 8,
                "vision_use_head": False,
            },
            "mm_tokens_per_image": 4,
        },
    ),
    (
        "llama4",
        {
            "text_config": {**_TEXT, **_MOE, "num_experts_per_tok": 1, "intermediate_size_mlp": 80, "interleave_moe_layer_step": 2},
            "vision_config": {
                "hidden_size": 32,
                "intermediate_size": 48,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "image_size": 32,
                "patch_size": 8,
                "projector_input_dim": 40,
                "projector_output_dim": 40,
                "vision_output_dim": 40,
            },
        },
    ),
    (
        "mistral3",
        {
            "text_config": {**_TEXT, "model_type": "mistral"},
            "vision_config": {
                "model_type": "pixtral",
                "hidden_size": 32,
                "intermediate_size": 48,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "head_dim": 8,
                "image_size": 32,
                "patch_size": 8,
            },
            "tie_word_embeddings": False,
            "multimodal_projector_bias": True,
        },
    ),
]


# Their config classes' special token ids lie beyond a small vocabulary: pinned inside it.
_TOKEN_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
NEW_FAMILIES = {
    "qwen3_next",
    "smollm3",
    "seed_oss",
    "exaone4",
    "glm4",
    "apertus",
    "cohere2",
    "glm4_moe",
    "dots1",
    "ernie4_5_moe",
    "hunyuan_v1_moe",
    "minimax_m2",
    "lfm2",
    "lfm2_moe",
    "granitemoehybrid",
    "nemotron_h",
    "gemma3n_text",
}


def small_config(model_type: str, keys: dict[str, Any]) -> dict[str, Any]:
    base = {} if model_type in WRAPPERS or model_type == "gpt2" else dict(_SMALL)
    if model_type in NEW_FAMILIES:
        base |= _TOKEN_IDS
    return {k: v for k, v in {**base, **keys, "model_type": model_type}.items() if v is not None}


CASES = [*SMALL_CONFIGS, *SMALL_WRAPPERS]
