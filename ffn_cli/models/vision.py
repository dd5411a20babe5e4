"""The vision tower of a multimodal config, counted beside its text model: its parts, each
with its parameters (read from the config by configs/vision.py, or built by transformers); an
audio tower too (MOSS-Transcribe-Diarize's, Muse Spark's), a part that runs on audio.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ffn_cli.accounting import ParamTensor

__all__ = ["VisionPart", "VisionTower"]


@dataclass(frozen=True)
class VisionPart:
    """One row of the tower: `copies` identical instances of `params_each`."""

    name: str
    detail: str
    params_each: int
    copies: int = 1
    runs_on: Literal["images", "audio", "source"] = "images"  # source: an encoder-decoder's encoder, on its source
    # Its tensors as built, each with its kind by the attribution rule ("attention", "ffn",
    # "embedding", …): an encoder-decoder's encoder, stored and split over --tp as the decoder's
    # layers are. Empty: a tower kept whole on every GPU, in the rest's format.
    tensors: tuple[tuple[ParamTensor, str], ...] = ()

    @property
    def params(self) -> int:
        return self.params_each * self.copies


@dataclass(frozen=True)
class VisionTower:
    name: str  # e.g. "SigLIP, 27 layers, d 1,152"
    parts: tuple[VisionPart, ...]

    @property
    def params(self) -> int:
        return sum(p.params for p in self.parts)

    @property
    def is_encoder(self) -> bool:
        """An encoder-decoder's encoder (held tensor by tensor), not a tower beside a decoder-only model."""
        return any(p.tensors for p in self.parts)

    @property
    def runs_on(self) -> frozenset[str]:
        """What its parts run on: images, audio, or both."""
        return frozenset(p.runs_on for p in self.parts)
