"""What each family's config class in transformers sets when a config.json leaves a key out.

Only the keys that change a parameter count. tests/test_models_transformers.py holds every
entry against the config class itself, so a drift in transformers shows as a failing test.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ALIASES", "DEFAULTS", "TEXT_DEFAULTS", "VISION_DEFAULTS"]

_LLAMA: dict[str, Any] = {
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "vocab_size": 32000,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
}
_MISTRAL = {**_LLAMA, "intermediate_size": 14336, "num_key_value_heads": 8}
_QWEN2_MOE = {
    **_LLAMA,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "vocab_size": 151936,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "decoder_sparse_step": 1,
    "qkv_bias": True,
}
_GEMMA2 = {
    **_LLAMA,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "vocab_size": 256000,
    "hidden_activation": "gelu_pytorch_tanh",
    "tie_word_embeddings": True,
}
_OLMO = {**_LLAMA, "vocab_size": 50304}
_BERT: dict[str, Any] = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "vocab_size": 30522,
    "hidden_act": "gelu",
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
}
_DEEPSEEK_V2 = {
    **_LLAMA,
    "vocab_size": 102400,
    "moe_intermediate_size": 1407,
    "n_routed_experts": 64,
    "n_shared_experts": 2,
    "first_k_dense_replace": 0,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
}

DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": _LLAMA,
    "mistral": _MISTRAL,
    "ministral": _MISTRAL,
    "mixtral": {**_MISTRAL, "num_local_experts": 8, "num_experts_per_tok": 2},
    "qwen2": {**_LLAMA, "intermediate_size": 22016, "vocab_size": 151936},
    "qwen2_moe": _QWEN2_MOE,
    "qwen3": {**_LLAMA, "intermediate_size": 22016, "vocab_size": 151936, "head_dim": 128},
    "qwen3_moe": {
        **{k: v for k, v in _QWEN2_MOE.items() if k not in ("num_experts", "shared_expert_intermediate_size", "qkv_bias")},
        "intermediate_size": 6144,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "num_local_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
    },
    "gemma": {
        **_LLAMA,
        "hidden_size": 3072,
        "intermediate_size": 24576,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "head_dim": 256,
        "vocab_size": 256000,
        "hidden_act": "gelu_pytorch_tanh",
        "tie_word_embeddings": True,
    },
    "gemma2": _GEMMA2,
    "gemma3_text": {**_GEMMA2, "vocab_size": 262208},
    # Gemma3nTextConfig; its intermediate_size (16,384 for every layer), layer_types and
    # activation_sparsity_pattern become per-layer lists on construction: the reader makes them.
    "gemma3n_text": {
        "hidden_size": 2048,
        "num_hidden_layers": 35,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "vocab_size": 262400,
        "hidden_activation": "gelu_pytorch_tanh",
        "tie_word_embeddings": True,
        "attention_bias": False,
        "vocab_size_per_layer_input": 262144,
        "hidden_size_per_layer_input": 256,
        "altup_num_inputs": 4,
        "laurel_rank": 64,
        "num_kv_shared_layers": 15,
        "sliding_window": 512,
    },
    "olmo": _OLMO,
    "olmo2": _OLMO,
    "olmo3": _OLMO,
    "granite": _LLAMA,
    "granitemoe": {**_LLAMA, "num_local_experts": 8, "num_experts_per_tok": 2},
    "granitemoeshared": {**_LLAMA, "num_local_experts": 8, "num_experts_per_tok": 2, "shared_intermediate_size": 0},
    "phi": {
        **_LLAMA,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 24,
        "vocab_size": 51200,
        "hidden_act": "gelu_new",
        "qk_layernorm": False,
    },
    "phi3": {**_LLAMA, "hidden_size": 3072, "intermediate_size": 8192, "vocab_size": 32064},
    "phimoe": {
        **_LLAMA,
        "intermediate_size": 6400,
        "num_key_value_heads": 8,
        "vocab_size": 32064,
        "num_local_experts": 16,
        "num_experts_per_tok": 2,
        "lm_head_bias": False,
    },
    "gpt_neox": {
        **_LLAMA,
        "hidden_size": 6144,
        "intermediate_size": 24576,
        "num_hidden_layers": 44,
        "num_attention_heads": 64,
        "vocab_size": 50432,
        "hidden_act": "gelu",
        "attention_bias": True,
        "use_parallel_residual": True,
    },
    "falcon": {
        "hidden_size": 4544,
        "num_hidden_layers": 32,
        "num_attention_heads": 71,
        "vocab_size": 65024,
        "activation": "gelu",
        "tie_word_embeddings": True,
        "multi_query": True,
        "new_decoder_architecture": False,
        "parallel_attn": True,
        "bias": False,
    },
    "starcoder2": {
        **_LLAMA,
        "hidden_size": 3072,
        "intermediate_size": 12288,
        "num_hidden_layers": 30,
        "num_attention_heads": 24,
        "num_key_value_heads": 2,
        "vocab_size": 49152,
        "hidden_act": "gelu_pytorch_tanh",
        "tie_word_embeddings": True,
        "use_bias": True,
    },
    "deepseek": {"hidden_act": "silu", "tie_word_embeddings": False},  # remote code: no class in transformers
    "deepseek_v2": _DEEPSEEK_V2,
    "deepseek_v3": {
        **_DEEPSEEK_V2,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "vocab_size": 129280,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "first_k_dense_replace": 3,
    },
    "gpt_oss": {
        **_LLAMA,
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_hidden_layers": 36,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "vocab_size": 201088,
        "attention_bias": True,
        "num_local_experts": 128,
        "num_experts_per_tok": 4,
    },
    "llama4_text": {
        **_LLAMA,
        "hidden_size": 5120,
        "intermediate_size": 8192,
        "intermediate_size_mlp": 16384,
        "num_hidden_layers": 48,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 202048,
        "num_local_experts": 16,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 1,
    },
    "gpt2": {
        "n_embd": 768,
        "n_layer": 12,
        "n_head": 12,
        "n_positions": 1024,
        "vocab_size": 50257,
        "activation_function": "gelu_new",
        "tie_word_embeddings": True,
    },
    "bert": _BERT,
    "roberta": {**_BERT, "vocab_size": 50265, "pad_token_id": 1},
    "xlm-roberta": {**_BERT, "pad_token_id": 1},
    "gemma3": {"tie_word_embeddings": True},
    "llama4": {"tie_word_embeddings": False},
    "mistral3": {"tie_word_embeddings": True},
    # The families of 2025: dense, then mixtures of experts.
    "smollm3": {**_LLAMA, "hidden_size": 2048, "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4}
    | {"vocab_size": 128256, "tie_word_embeddings": True},
    "seed_oss": {**_LLAMA, "intermediate_size": 27648, "num_hidden_layers": 64, "num_attention_heads": 80, "num_key_value_heads": 8}
    | {"head_dim": 128, "vocab_size": 155136, "attention_bias": True, "attention_out_bias": False},
    "exaone4": {**_LLAMA, "intermediate_size": 16384, "num_key_value_heads": 32, "vocab_size": 102400},
    "glm4": {**_LLAMA, "intermediate_size": 13696, "num_hidden_layers": 40, "num_key_value_heads": 2, "head_dim": 128}
    | {"vocab_size": 151552, "attention_bias": True},
    "apertus": {**_LLAMA, "intermediate_size": 14336, "vocab_size": 131072, "hidden_act": "xielu"},
    "cohere2": {**_LLAMA, "hidden_size": 8192, "intermediate_size": 22528, "num_hidden_layers": 40, "num_attention_heads": 64}
    | {"num_key_value_heads": 64, "vocab_size": 256000, "tie_word_embeddings": True},
    "glm4_moe": {**_LLAMA, "intermediate_size": 10944, "num_hidden_layers": 46, "num_attention_heads": 96, "num_key_value_heads": 8}
    | {"vocab_size": 151552, "use_qk_norm": False, "moe_intermediate_size": 1408, "n_routed_experts": 128, "num_experts_per_tok": 8}
    | {"n_shared_experts": 1, "first_k_dense_replace": 1, "norm_topk_prob": True, "n_group": 1, "topk_group": 1},
    "ernie4_5_moe": {**_LLAMA, "hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 28, "num_attention_heads": 20}
    | {"num_key_value_heads": 4, "vocab_size": 103424, "tie_word_embeddings": True, "use_bias": False, "moe_intermediate_size": 1536}
    | {"moe_num_experts": 64, "moe_k": 6, "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": 27}
    | {"moe_layer_interval": 1},
    "dots1": {**_LLAMA, "hidden_size": 4608, "intermediate_size": 10944, "num_hidden_layers": 62, "num_key_value_heads": 32}
    | {"vocab_size": 152064, "moe_intermediate_size": 1408, "first_k_dense_replace": 0, "norm_topk_prob": False, "n_group": 1}
    | {"topk_group": 1},
    "hunyuan_v1_moe": {**_LLAMA, "num_key_value_heads": 32, "vocab_size": 290943, "num_experts": 1, "moe_topk": 1},
    "qwen3_next": {**_LLAMA, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 48, "num_attention_heads": 16}
    | {"num_key_value_heads": 2, "head_dim": 256, "vocab_size": 151936, "num_experts": 512, "num_experts_per_tok": 10}
    | {"moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "decoder_sparse_step": 1, "norm_topk_prob": True}
    | {"linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16}
    | {"linear_num_value_heads": 32},
    "lfm2": {"hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8}
    | {"vocab_size": 65536, "tie_word_embeddings": True, "conv_bias": False, "conv_L_cache": 3, "block_multiple_of": 256}
    | {"block_ffn_dim_multiplier": 1.0, "block_auto_adjust_ff_dim": True},
    "lfm2_moe": {"hidden_size": 2048, "intermediate_size": 7168, "moe_intermediate_size": 1792, "num_hidden_layers": 32}
    | {"num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 65536, "tie_word_embeddings": True, "conv_bias": False}
    | {"conv_L_cache": 3, "num_dense_layers": 2, "num_experts_per_tok": 4, "num_experts": 32, "use_expert_bias": True}
    | {"routed_scaling_factor": 1.0, "norm_topk_prob": True},
    "granitemoehybrid": {**_LLAMA, "num_local_experts": 8, "num_experts_per_tok": 2, "shared_intermediate_size": 1024}
    | {"mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4}
    | {"mamba_expand": 2, "mamba_conv_bias": True, "mamba_proj_bias": False, "mamba_chunk_size": 256},
    "nemotron_h": {"vocab_size": 131072, "hidden_size": 4096, "tie_word_embeddings": False, "num_attention_heads": 32}
    | {"num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 21504, "mlp_hidden_act": "relu2", "mlp_bias": False}
    | {"ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "conv_kernel": 4, "use_conv_bias": True}
    | {"chunk_size": 128}
    | {"use_bias": False, "n_routed_experts": 8, "moe_intermediate_size": 7688, "moe_shared_expert_intermediate_size": 7688}
    | {"num_experts_per_tok": 2, "routed_scaling_factor": 1.0, "n_group": 1, "topk_group": 1, "norm_topk_prob": True}
    | {"layers_block_type": ["linear_attention", "moe", "full_attention", "mlp"]},
    "minimax_m2": {**_LLAMA, "hidden_size": 3072, "intermediate_size": 1536, "num_hidden_layers": 62, "num_attention_heads": 48}
    | {"num_key_value_heads": 8, "head_dim": 128, "vocab_size": 200064, "num_local_experts": 256, "num_experts_per_tok": 8},
}

# transformers' attribute_map: a config may spell these keys either way.
ALIASES: dict[str, dict[str, str]] = {
    "mixtral": {"num_local_experts": "num_experts"},
    "qwen3_moe": {"num_local_experts": "num_experts"},
    "gpt_oss": {"num_local_experts": "num_experts"},
    "deepseek_v2": {"n_routed_experts": "num_experts"},
    "deepseek_v3": {"n_routed_experts": "num_local_experts"},
    "glm4_moe": {"n_routed_experts": "num_local_experts"},
    "dots1": {"n_routed_experts": "num_local_experts"},
    "ernie4_5_moe": {"moe_num_experts": "num_experts", "moe_k": "num_experts_per_tok"},
    "hunyuan_v1_moe": {"moe_topk": "num_experts_per_tok", "num_experts": "num_local_experts"},
    "minimax_m2": {"num_local_experts": "num_experts"},
    "granitemoehybrid": {"layer_types": "layers_block_type"},
    "nemotron_h": {"layers_block_type": "layer_types", "n_routed_experts": "num_local_experts"},
    "gpt2": {
        "n_embd": "hidden_size",
        "n_positions": "max_position_embeddings",
        "n_head": "num_attention_heads",
        "n_layer": "num_hidden_layers",
    },
}

# A multimodal config without text_config / vision_config gets these (transformers' sub-config
# defaults); with one, its keys over the nested class's own defaults.
TEXT_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3": {"model_type": "gemma3_text"},
    "llama4": {"model_type": "llama4_text"},
    "mistral3": {
        "model_type": "mistral",
        "head_dim": 128,
        "hidden_size": 5120,
        "intermediate_size": 32768,
        "num_attention_heads": 32,
        "num_hidden_layers": 40,
        "num_key_value_heads": 8,
        "vocab_size": 131072,
    },
}
VISION_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3": {"model_type": "siglip_vision_model"},
    "llama4": {"model_type": "llama4_vision_model"},
    "mistral3": {
        "model_type": "pixtral",
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "patch_size": 14,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
    },
}
