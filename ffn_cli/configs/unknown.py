"""The error of a model_type no reader knows, apart from the readers: a command catches it
without loading them (`ffn trace` with no model named never does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ffn_cli.errors import FFNError, FFNRuntimeError

__all__ = ["SeveralTextModels", "UnknownModelType"]


class UnknownModelType(FFNError):
    """No reader knows this model_type. It carries the config, so `ffn params` can count it by
    building it with transformers instead (ffn_cli.configs.fallback)."""

    def __init__(self, config: Mapping[str, Any], name: str, source: str, supported: Sequence[str]) -> None:
        super().__init__("model_type", config.get("model_type"), "supported: " + ", ".join(supported))
        self.config, self.name, self.source = config, name, source


class SeveralTextModels(FFNRuntimeError):
    """A config of more than one text model (MusicGen's text encoder and decoder): neither its
    layout nor a count by building reads it, so no refusal points from one to the other."""
