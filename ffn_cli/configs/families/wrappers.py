"""Multimodal wrappers: the text model in text_config, read by its own family, and a vision
tower beside it (Gemma 3, Llama 4, Mistral 3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ffn_cli.configs.defaults import DEFAULTS, TEXT_DEFAULTS, VISION_DEFAULTS
from ffn_cli.configs.families.common import FamilyReader
from ffn_cli.configs.families.family import Family
from ffn_cli.configs.families.text import TEXT_FAMILIES
from ffn_cli.configs.vision import llama4_tower, pixtral_tower, siglip_tower
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.spec import ModelSpec
from ffn_cli.models.vision import VisionTower

__all__ = ["GEMMA3", "LLAMA4", "MISTRAL3"]


def _wrapped(r: FamilyReader, name: str, text_type: str, tower: Callable[[FamilyReader, int], VisionTower]) -> ModelSpec:
    text = r.nested("text_config", text_type, TEXT_DEFAULTS.get(r.model_type))
    family = TEXT_FAMILIES.get(text.model_type)
    if family is None:
        raise FFNError(
            text.key("model_type"), text.model_type, _("supported: {text_readers}").format(text_readers=", ".join(TEXT_FAMILIES))
        )
    spec = family.read(FamilyReader(text.config, text.model_type, text.source, text.prefix), name)
    vision = r.nested("vision_config", "", VISION_DEFAULTS.get(r.model_type))
    tie = r.flag("tie_word_embeddings", DEFAULTS[r.model_type]["tie_word_embeddings"])
    tower_spec = tower(FamilyReader(vision.config, vision.model_type, vision.source, vision.prefix), spec.d_model)
    return replace(spec, model_type=r.model_type, tie_word_embeddings=tie, vision=tower_spec, source=r.source)


def _gemma3(r: FamilyReader, name: str) -> ModelSpec:
    return _wrapped(r, name, "gemma3_text", siglip_tower)


def _llama4(r: FamilyReader, name: str) -> ModelSpec:
    return _wrapped(r, name, "llama4_text", llama4_tower)


def _mistral3(r: FamilyReader, name: str) -> ModelSpec:
    layer = r.get("vision_feature_layer", -1)
    feature_layers = len(layer) if isinstance(layer, list) else 1
    merge, bias = r.integer("spatial_merge_size", 2), r.flag("multimodal_projector_bias", False)
    return _wrapped(r, name, "mistral", lambda v, d: pixtral_tower(v, d, merge=merge, feature_layers=feature_layers, projector_bias=bias))


# Gemma 3's and Llama 4's wrappers keep every fact of their text family (its layers slide or
# chunk as theirs, windows.py reading text_config first; its block computes as theirs), with
# their own model_type and reader. Mistral 3 declares none of Mistral's: a text_config without
# a model_type of its own slides nowhere.
GEMMA3 = replace(TEXT_FAMILIES["gemma3_text"], model_types=("gemma3",), read=_gemma3)
LLAMA4 = replace(TEXT_FAMILIES["llama4_text"], model_types=("llama4",), read=_llama4)
MISTRAL3 = Family(("mistral3",), _mistral3)
