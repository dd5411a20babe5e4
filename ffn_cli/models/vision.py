"""The vision tower of a multimodal config, counted beside its text model: its parts, each
with its parameters (read from the config by configs/vision.py, or built by transformers); an
audio tower too (MOSS-Transcribe-Diarize's, Muse Spark's), a part that runs on audio; an omni
model's speech output (Qwen3-Omni's talker and vocoder), a part that runs on the speech it speaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ffn_cli.accounting import ParamTensor
from ffn_cli.i18n import N_

__all__ = ["TowerInput", "VisionPart", "VisionTower", "towers_named"]

# What a part no text token runs runs on instead: images, audio, the speech an omni model speaks (its
# talker and vocoder), or the source an encoder-decoder's encoder reads.
TowerInput = Literal["images", "audio", "speech", "source"]


# Towers by what they run on, as a row names them.
_TOWERS_NAMED: dict[frozenset[str], str] = {
    frozenset({"images"}): N_("vision tower"),
    frozenset({"audio"}): N_("audio tower"),
    frozenset({"images", "audio"}): N_("vision and audio towers"),
    frozenset({"speech"}): N_("speech output"),
}


def towers_named(runs_on: frozenset[str]) -> str:
    """The row's name for towers that run on `runs_on`: "vision and audio towers"; with an omni
    model's speech output beside them, "towers and speech output"."""
    towers = runs_on - {"source"}  # an encoder-decoder's encoder is named apart
    return _TOWERS_NAMED.get(towers or frozenset({"images"}), N_("towers and speech output"))


@dataclass(frozen=True)
class VisionPart:
    """One row of the tower: `copies` identical instances of `params_each`."""

    name: str
    detail: str
    params_each: int
    copies: int = 1
    runs_on: TowerInput = "images"
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
        """What its parts run on: images, audio, speech, or several."""
        return frozenset(p.runs_on for p in self.parts)
