"""Every family, collected: the model_type a config names → its Family, and that family's
ModelSpec of the config. A new family is one module in this package and one line in text.py
(or below, for a multimodal wrapper)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ffn_cli.configs.families import wrappers
from ffn_cli.configs.families.common import FamilyReader, Unreadable
from ffn_cli.configs.families.family import Family
from ffn_cli.configs.families.text import TEXT_FAMILIES
from ffn_cli.configs.unknown import UnknownModelType
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.spec import ModelSpec

__all__ = ["FAMILIES", "SUPPORTED_MODEL_TYPES", "family_of", "model_spec_from_config"]

# model_type → the family that reads it: the text families, then the multimodal wrappers.
FAMILIES: dict[str, Family] = {
    **TEXT_FAMILIES,
    **{t: family for family in (wrappers.GEMMA3, wrappers.LLAMA4, wrappers.MISTRAL3) for t in family.model_types},
}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(FAMILIES)
# Also the model_types no family reads but one family's text model sits in (Gemma 3n's wrapper).
_FACTS: dict[str, Family] = {**{t: f for f in FAMILIES.values() for t in f.nested_in}, **FAMILIES}


def family_of(model_type: str) -> Family | None:
    """The family whose facts (windows, causality) hold for model_type, or None for one ffn
    has no reader for."""
    return _FACTS.get(model_type)


def model_spec_from_config(config: Mapping[str, Any], *, name: str | None = None, source: str = "config") -> ModelSpec:
    """The ModelSpec of a Hugging Face config dict; `name` defaults to its _name_or_path."""
    model_type = config.get("model_type")
    if model_type is None:
        raise FFNError(
            "config",
            source,
            _("has no 'model_type'; supported: {supported_model_types}").format(supported_model_types=", ".join(SUPPORTED_MODEL_TYPES)),
        )
    label = name or config.get("_name_or_path") or source
    if not isinstance(model_type, str) or model_type not in FAMILIES:
        raise UnknownModelType(config, str(label), source, SUPPORTED_MODEL_TYPES)
    try:
        return FAMILIES[model_type].read(FamilyReader(config, model_type, source), str(label))
    except Unreadable as unreadable:  # a known family in a shape no FFNSpec holds: counted by building it
        raise UnknownModelType(unreadable.config, unreadable.name, unreadable.source, SUPPORTED_MODEL_TYPES) from None
