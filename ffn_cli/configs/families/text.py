"""Every text family, in the order `supported:` lists them: what a multimodal wrapper's
text_config may name, and the first part of the registry."""

from __future__ import annotations

from ffn_cli.configs.families import classic, deepseek, gemma, gemma3n, hybrids, llama, moe, nemotron_h, qwen
from ffn_cli.configs.families.family import Family

__all__ = ["TEXT_FAMILIES"]

_IN_ORDER: tuple[Family, ...] = (
    llama.LLAMA,
    llama.MISTRAL,
    llama.MINISTRAL,
    moe.MIXTRAL,
    qwen.QWEN2,
    qwen.QWEN2_MOE,
    qwen.QWEN3,
    qwen.QWEN3_MOE,
    gemma.GEMMA,
    gemma.GEMMA2,
    gemma.GEMMA3_TEXT,
    llama.OLMO,
    llama.OLMO2,
    llama.GRANITE,
    moe.GRANITEMOE,
    moe.GRANITEMOESHARED,
    classic.PHI,
    llama.PHI3,
    moe.PHIMOE,
    classic.GPT_NEOX,
    classic.FALCON,
    llama.STARCODER2,
    deepseek.DEEPSEEK,
    deepseek.DEEPSEEK_V3,
    moe.GPT_OSS,
    moe.LLAMA4_TEXT,
    classic.GPT2,
    classic.BERT,
    llama.SMOLLM3,
    llama.SEED_OSS,
    llama.EXAONE4,
    llama.GLM4,
    llama.APERTUS,
    llama.COHERE2,
    deepseek.GLM4_MOE,
    deepseek.DOTS1,
    deepseek.ERNIE4_5_MOE,
    moe.HUNYUAN_V1_MOE,
    moe.MINIMAX_M2,
    hybrids.QWEN3_NEXT,
    hybrids.LFM2,
    hybrids.LFM2_MOE,
    hybrids.GRANITEMOEHYBRID,
    nemotron_h.NEMOTRON_H,
    gemma3n.GEMMA3N_TEXT,
)
# model_type → its family, for every model_type a text family reads.
TEXT_FAMILIES: dict[str, Family] = {t: family for family in _IN_ORDER for t in family.model_types}
