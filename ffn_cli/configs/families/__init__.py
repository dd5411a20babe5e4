"""Hugging Face config.json → ModelSpec: one `Family` object per model family (family.py), a
module per family or group of close families, the shared reading pieces in common.py and every
family collected in registry.py.

Each family's reader encodes its modelling code (transformers' modeling_<type>.py, DeepSeek's
modeling_deepseek.py for the first DeepSeek-MoE): which projections carry biases, head_dim,
q/k norms, how many norms a layer holds, fused projections, which layers are MoE.
"""

from ffn_cli.configs.families.family import AttentionReach, Family
from ffn_cli.configs.families.gemma3n import GEMMA3N_WIDTH
from ffn_cli.configs.families.moe import GPT_OSS_EXPERT_VARIANT
from ffn_cli.configs.families.registry import FAMILIES, SUPPORTED_MODEL_TYPES, family_of, model_spec_from_config
from ffn_cli.configs.unknown import UnknownModelType

__all__ = [
    "FAMILIES",
    "GEMMA3N_WIDTH",
    "GPT_OSS_EXPERT_VARIANT",
    "SUPPORTED_MODEL_TYPES",
    "AttentionReach",
    "Family",
    "UnknownModelType",
    "family_of",
    "model_spec_from_config",
]
