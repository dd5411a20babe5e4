"""Tiny configs of model families ffn has no reader for, in transformers' own config classes.

Each entry is `model_type → overrides` on top of SMALL; `DECODER_ONLY` marks the decoder-only
Transformers, the ones held to less than 1 % "other". Sizes are a few thousand parameters, so
the whole list builds in seconds.
"""

from __future__ import annotations

from typing import Any

SMALL: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 256,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
# Routed experts, small: 4 experts of width 32, two per token.
_MOE = {"num_experts": 4, "num_local_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}

DECODER_ONLY: dict[str, dict[str, Any]] = {
    "apertus": {},
    "arcee": {},
    "biogpt": {},
    "codegen": {},
    "cohere": {},
    "cohere2": {},
    "dbrx": {
        "attn_config": {"kv_n_heads": 2, "rope_theta": 10000.0},
        "ffn_config": {"ffn_hidden_size": 128, "moe_num_experts": 4, "moe_top_k": 2},
    },
    "deepseek_v2": {**_MOE, "n_routed_experts": 4, "first_k_dense_replace": 1, "kv_lora_rank": 16, "q_lora_rank": 32},
    "deepseek_v3": {
        **_MOE,
        "n_routed_experts": 4,
        "first_k_dense_replace": 1,
        "kv_lora_rank": 16,
        "q_lora_rank": 32,
        "n_group": 1,
        "topk_group": 1,
    },
    "doge": {},
    "dots1": {**_MOE, "n_routed_experts": 4, "n_shared_experts": 1, "first_k_dense_replace": 1},
    "ernie4_5": {},
    "ernie4_5_moe": {**_MOE, "moe_num_experts": 4, "moe_k": 2},
    "exaone4": {},
    "falcon": {"head_dim": None, "num_kv_heads": 2, "new_decoder_architecture": True},
    "gemma2": {},
    "gemma3_text": {},
    "glm": {},
    "glm4": {},
    "gpt_bigcode": {},
    "gpt_neox": {},
    "gpt_oss": {**_MOE, "num_local_experts": 4},
    "gptj": {},
    "granite": {},
    "granitemoe": _MOE,
    "helium": {},
    "hunyuan_v1_dense": {},
    "jetmoe": {"num_local_experts": 4, "num_experts_per_tok": 2, "kv_channels": 16},
    "llama4_text": {**_MOE, "interleave_moe_layer_step": 1, "intermediate_size_mlp": 128},
    "minimax": _MOE,
    "mpt": {},
    "nemotron": {},
    "olmo2": {},
    "olmoe": _MOE,
    "opt": {"ffn_dim": 128, "word_embed_proj_dim": 64},
    "persimmon": {},
    "phi": {},
    "phimoe": _MOE,
    "qwen3": {},
    "qwen3_moe": _MOE,
    "seed_oss": {},
    "smollm3": {},
    "stablelm": {},
    "starcoder2": {},
    "xglm": {"ffn_dim": 128},
}
OTHERS: dict[str, dict[str, Any]] = {
    "bamba": {"mamba_n_heads": 8, "mamba_d_head": 16},
    "bart": {"encoder_ffn_dim": 128, "decoder_ffn_dim": 128},
    # HRM: two stacks of 2 layers run in 2 H cycles of 2 L cycles each, num_hidden_layers the cache's slots
    "hrm_text": {"num_layers_per_stack": 2, "H_cycles": 2, "L_cycles": 2, "num_hidden_layers": 12, "tie_word_embeddings": True},
    # CPM-Ant: 4 soft-prompt tokens before every sequence, run and cached as the text's own
    "cpmant": {"dim_head": 16, "dim_ff": 128, "prompt_length": 4},
    # XLM: its layers are lists side by side (attentions, ffns, layer_norm1, layer_norm2): no layout ffn reads
    "xlm": {"emb_dim": 64, "n_layers": 2, "n_heads": 4},
    "electra": {"embedding_size": 32},
    "falcon_mamba": {},
    "jamba": {**_MOE, "attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2, "expert_layer_offset": 1},
    "mamba": {},
    "mamba2": {"num_heads": 8, "head_dim": 16, "n_groups": 1},
    "modernbert": {},
    "mt5": {"d_ff": 128, "d_kv": 16},
    "recurrent_gemma": {"lru_width": 64},
    "roberta": {},
    "rwkv": {"attention_hidden_size": 64},
    "switch_transformers": {"d_ff": 128, "d_kv": 16, "num_experts": 4},
    # every second layer a MoE of 4 experts, encoder and decoder
    "nllb-moe": {
        "d_model": 64,
        "encoder_ffn_dim": 128,
        "decoder_ffn_dim": 128,
        "encoder_layers": 2,
        "decoder_layers": 2,
        "encoder_attention_heads": 4,
        "decoder_attention_heads": 4,
        "num_experts": 4,
        "encoder_sparse_step": 2,
        "decoder_sparse_step": 2,
    },
    "t5": {"d_ff": 128, "d_kv": 16},
}
FAMILIES: dict[str, dict[str, Any]] = {**DECODER_ONLY, **OTHERS}


def tiny_config(model_type: str) -> dict[str, Any]:
    """The config.json of a tiny `model_type`, as transformers writes it (every default filled)."""
    from transformers import AutoConfig

    overrides = {k: v for k, v in {**SMALL, **FAMILIES[model_type]}.items() if v is not None}
    config = AutoConfig.for_model(model_type, **overrides).to_diff_dict()
    config["_name_or_path"] = f"tiny-{model_type}"
    return config
