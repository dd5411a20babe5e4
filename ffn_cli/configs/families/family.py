"""What ffn knows of one model family, in one object: the model_types it reads, how it reads a
config into a ModelSpec, and the facts other modules ask of it: which keys each layer's
attention reads (ffn_cli.configs.windows applies them) and what a traced block of it leaves out
(ffn_cli.configs.layer_select lists it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ffn_cli.configs.families.common import FamilyReader
    from ffn_cli.models.spec import ModelSpec

__all__ = ["AttentionReach", "Family", "SlidingRule"]

# Which layers slide when sliding_window is set; an explicit layer_types list wins in every
# rule (in "flagged" once use_sliding_window allows sliding at all).
#   layer_types        only those layer_types names sliding_attention
#   flagged            none unless use_sliding_window, then as layer_types says (SmolLM3)
#   pattern            layer_types, else every full_every-th layer full, the rest sliding
#   max_window_layers  layer_types, else with use_sliding_window the layers from max_window_layers on (Qwen)
#   every_layer        layer_types, else every layer
SlidingRule = Literal["layer_types", "flagged", "pattern", "max_window_layers", "every_layer"]


@dataclass(frozen=True)
class AttentionReach:
    """Which keys a family's attention lets a query read, as its config class defaults them.
    The default is what a model_type no family reads gets: causal, windows only where
    layer_types names them."""

    window: int | None = None  # the sliding_window its config class sets when the key is absent
    sliding: SlidingRule = "layer_types"
    full_every: int | None = None  # "pattern": the period of the full layers (sliding_window_pattern's default)
    chunk: int | None = None  # the attention_chunk_size its class sets: layers with rotary attend in chunks (Llama 4)
    causal: bool = True  # False for a bidirectional encoder: every query reads every key

    def __post_init__(self) -> None:
        if (self.sliding == "pattern") != (self.full_every is not None):
            raise ValueError("full_every goes with the 'pattern' rule, and only with it")


@dataclass(frozen=True)
class Family:
    """One family: `read(reader, name)` builds the ModelSpec of a config of any of `model_types`."""

    model_types: tuple[str, ...]
    read: Callable[[FamilyReader, str], ModelSpec]
    reach: AttentionReach = field(default_factory=AttentionReach)
    nested_in: tuple[str, ...] = ()  # model_types no family reads that nest this text model: its reach holds for them
    # What `--block` says of its real block beyond what ffn_cli.block builds: parts at other
    # places (block_notes), and what it computes differently at the same shapes, FLOPs and
    # parameters (value_notes). Plain text, as every other such note.
    block_notes: tuple[str, ...] = ()
    value_notes: tuple[str, ...] = ()
    unscaled_scores: bool = False  # its attention scores are not scaled: query_pre_attn_scalar says nothing
    keyed_value_notes: tuple[tuple[str, str], ...] = ()  # (config key, value note): said where the config sets the key
