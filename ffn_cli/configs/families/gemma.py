"""Gemma 1 to 3 (text): LLaMA's layout with Gemma's activation key, tied embeddings, 4 norms a
layer from Gemma 2 on, and sliding layers alternating with full ones.
"""

from __future__ import annotations

from ffn_cli.configs.families.common import FamilyReader, llama_like
from ffn_cli.configs.families.family import AttentionReach, Family
from ffn_cli.models.spec import ModelSpec

__all__ = ["GEMMA", "GEMMA2", "GEMMA3_TEXT"]


def _gemma(r: FamilyReader, name: str) -> ModelSpec:
    # Tied embeddings and head_dim 256 by default; GemmaRMSNorm keeps one weight (applied as 1 + w).
    bias = r.flag("attention_bias", False)
    return llama_like(r, name, qkv_bias=bias, act_keys=("hidden_activation", "hidden_act"))


def _gemma2(r: FamilyReader, name: str) -> ModelSpec:
    # Norms before and after both attention and FFN: 4 per layer. Soft-capping has no parameters.
    bias = r.flag("attention_bias", False)
    return llama_like(r, name, qkv_bias=bias, act_keys=("hidden_activation", "hidden_act"), norms_per_layer=4)


def _gemma3_text(r: FamilyReader, name: str) -> ModelSpec:
    bias = r.flag("attention_bias", False)
    return llama_like(r, name, qkv_bias=bias, act_keys=("hidden_activation", "hidden_act"), norms_per_layer=4, qk_norm="head")


# GemmaRMSNorm scales by (1 + w).
_ONE_PLUS_W = ("Gemma's norms scale by (1 + w), built as w (values only)",)
GEMMA = Family(("gemma",), _gemma, value_notes=_ONE_PLUS_W)
GEMMA2 = Family(("gemma2",), _gemma2, value_notes=_ONE_PLUS_W, reach=AttentionReach(window=4096, sliding="pattern", full_every=2))
GEMMA3_TEXT = Family(
    ("gemma3_text",), _gemma3_text, value_notes=_ONE_PLUS_W, reach=AttentionReach(window=4096, sliding="pattern", full_every=6)
)
