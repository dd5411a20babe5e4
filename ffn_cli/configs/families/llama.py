"""LLaMA's layout and the decoders that keep it: dense gated FFN, pre-norms, at most biases,
q/k norms, fused projections or a different norm count changed (Mistral, Granite, OLMo, Phi-3,
Starcoder2, SmolLM3, Seed-OSS, EXAONE 4, GLM-4, Apertus, Command R7B).
"""

from __future__ import annotations

from ffn_cli.configs.families.common import FamilyReader, attention_spec, decoder_spec, dense_spec, llama_like
from ffn_cli.configs.families.family import AttentionReach, Family
from ffn_cli.models.spec import ModelSpec

__all__ = [
    "APERTUS",
    "COHERE2",
    "EXAONE4",
    "GLM4",
    "GRANITE",
    "LLAMA",
    "MINISTRAL",
    "MISTRAL",
    "OLMO",
    "OLMO2",
    "PHI3",
    "SEED_OSS",
    "SMOLLM3",
    "STARCODER2",
]


def _llama(r: FamilyReader, name: str) -> ModelSpec:
    bias = r.flag("attention_bias", False)
    return llama_like(r, name, qkv_bias=bias, mlp_bias=r.flag("mlp_bias", False))


def _mistral(r: FamilyReader, name: str) -> ModelSpec:
    return llama_like(r, name)  # no biases anywhere; GQA and head_dim come from the config


def _granite(r: FamilyReader, name: str) -> ModelSpec:
    # LLaMA's shape; its embedding, residual, attention and logit multipliers are scalars, not parameters.
    bias = r.flag("attention_bias", False)
    return llama_like(r, name, qkv_bias=bias, mlp_bias=r.flag("mlp_bias", False))


def _olmo(r: FamilyReader, name: str) -> ModelSpec:
    bias = r.flag("attention_bias", False)
    return llama_like(r, name, qkv_bias=bias, o_bias=bias, norm="layernorm_no_affine")  # OLMo-1: LayerNorm without weight or bias


def _olmo2(r: FamilyReader, name: str) -> ModelSpec:
    # Post-norms only (after attention, after the FFN) and q/k RMSNorms over the whole projections.
    bias = r.flag("attention_bias", False)
    return llama_like(r, name, qkv_bias=bias, qk_norm="proj")


def _phi3(r: FamilyReader, name: str) -> ModelSpec:
    return llama_like(r, name, fused=True)  # one qkv_proj and one gate_up_proj (gate first), no biases


def _starcoder2(r: FamilyReader, name: str) -> ModelSpec:
    # q, k, v, o and c_fc, c_proj all biased with use_bias; LayerNorms with bias; plain GELU MLP.
    d = r.integer("hidden_size")
    bias = r.flag("use_bias", True)
    attention = attention_spec(r, d, qkv_bias=bias)
    dense = dense_spec(r, d, gated=False, bias=bias)
    return decoder_spec(r, name, attention=attention, dense=dense, norm="layernorm")


def _smollm3(r: FamilyReader, name: str) -> ModelSpec:
    # LLaMA's layout; no_rope_layers and the sliding window move no parameter.
    return llama_like(r, name, qkv_bias=r.flag("attention_bias", False), mlp_bias=r.flag("mlp_bias", False))


def _seed_oss(r: FamilyReader, name: str) -> ModelSpec:
    # q, k, v biased with attention_bias, o with its own attention_out_bias.
    bias = r.flag("attention_bias", True)
    return llama_like(r, name, qkv_bias=bias, o_bias=r.flag("attention_out_bias", False), mlp_bias=r.flag("mlp_bias", False))


def _exaone4(r: FamilyReader, name: str) -> ModelSpec:
    # No biases; q/k RMSNorm per head; norms after attention and after the FFN only (2 per layer).
    return llama_like(r, name, qk_norm="head")


def _glm4(r: FamilyReader, name: str) -> ModelSpec:
    # One gate_up_proj (gate first); q, k, v biased with attention_bias, o never; 4 norms per
    # layer (before and after attention and FFN).
    d = r.integer("hidden_size")
    attention = attention_spec(r, d, qkv_bias=r.flag("attention_bias", True), o_bias=False)
    return decoder_spec(r, name, attention=attention, dense=dense_spec(r, d, fused=True), norms_per_layer=4)


def _apertus(r: FamilyReader, name: str) -> ModelSpec:
    # An ungated MLP (up, xIELU with its two learnable scalars, down); q/k RMSNorm per head.
    d = r.integer("hidden_size")
    attention = attention_spec(r, d, qkv_bias=r.flag("attention_bias", False), qk_norm="head")
    return decoder_spec(r, name, attention=attention, dense=dense_spec(r, d, gated=False))


def _cohere2(r: FamilyReader, name: str) -> ModelSpec:
    # Command R7B: one LayerNorm (weight, no bias) feeds attention and the gated MLP in parallel;
    # tied head; logit_scale is a scalar of the forward, not a parameter. head_dim is
    # hidden_size / heads unless the config gives one (the class has no default of its own).
    d = r.integer("hidden_size")
    attention = attention_spec(r, d, qkv_bias=r.flag("attention_bias", False))
    return decoder_spec(
        r, name, attention=attention, dense=dense_spec(r, d), norm="layernorm_no_bias", norms_per_layer=1, parallel_block=True
    )


# Norms on the attention's and the FFN's outputs, none on their inputs.
_POST_NORMS = ("norms on the sublayer outputs (built pre-norm)",)

LLAMA = Family(("llama",), _llama)
MISTRAL = Family(("mistral",), _mistral, reach=AttentionReach(window=4096, sliding="every_layer"))
MINISTRAL = Family(("ministral",), _mistral)
OLMO = Family(("olmo",), _olmo)
OLMO2 = Family(("olmo2", "olmo3"), _olmo2, block_notes=_POST_NORMS)
GRANITE = Family(("granite",), _granite)
PHI3 = Family(("phi3",), _phi3, reach=AttentionReach(sliding="every_layer"))
STARCODER2 = Family(("starcoder2",), _starcoder2, reach=AttentionReach(sliding="every_layer"))
SMOLLM3 = Family(("smollm3",), _smollm3, reach=AttentionReach(sliding="flagged"))
SEED_OSS = Family(("seed_oss",), _seed_oss)
EXAONE4 = Family(("exaone4",), _exaone4, block_notes=_POST_NORMS, reach=AttentionReach(window=4096, sliding="pattern", full_every=4))
GLM4 = Family(("glm4",), _glm4)
APERTUS = Family(("apertus",), _apertus)
COHERE2 = Family(("cohere2",), _cohere2, reach=AttentionReach(window=4096, sliding="pattern", full_every=4))
