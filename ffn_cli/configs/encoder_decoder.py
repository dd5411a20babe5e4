"""An encoder-decoder (BART and its kin, Whisper, T5 and its kin) laid out as its decoder, with the encoder beside it.

What generates tokens is the decoder: its layers attend to the tokens generated so far (self_attn,
a KV cache that grows) and to the encoder's output (encoder_attn, keys and values projected once a
source and kept while decoding, however long the output grows). The encoder runs once a source, as
a vision tower runs once an image: counted whole, run on the source, never by a token decoded.

The source's length is the most the encoder hands on: Whisper's max_source_positions (1,500 frames
for its 30-second window, the length it always runs); LED's max_encoder_position_embeddings, a text
encoder's max_position_embeddings, where a shorter source keeps less (--source-len). T5's relative
positions name no most: its source is sized by --source-len alone. transformers' own Seq2Seq
classes build the model, with its head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import transformers
from torch import nn
from transformers import PretrainedConfig
from transformers.models.auto import modeling_auto

from ffn_cli.i18n import N_, Message

__all__ = ["CROSS_ATTENTION", "ENCODER_ATTENTION", "EncoderDecoder", "encoder_decoder_of", "half_of", "seq2seq_class"]

# A decoder layer's attention over the encoder's output, by the name its module takes
CROSS_ATTENTION = ("encoder_attn", "cross_attn")  # BART's and its kin's; T5Gemma's
# A decoder alone's (TrOCR's): there, cross_attn is an image's (Llama 3.2 Vision's cross-attention layers)
ENCODER_ATTENTION = ("encoder_attn",)

# Encoders that pad every input to the most they take, so hand on that many tokens whatever the input:
# Whisper's 30-second window of 3,000 mel frames, 1,500 positions (its encoder refuses any other length).
_PADDED_TO_THE_MOST = frozenset({"whisper"})

# The classes that build an encoder-decoder with its head: text to text, speech to text, image to text
_SEQ2SEQ = (
    ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "AutoModelForSeq2SeqLM", "source"),
    ("MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "AutoModelForSpeechSeq2Seq", "audio"),
    # an image-to-text encoder-decoder (Florence-2, Pix2Struct, UDOP): its encoder reads the image, and the prompt where it takes one
    ("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "AutoModelForImageTextToText", "source"),
)


@dataclass(frozen=True)
class EncoderDecoder:
    """What ffn reads of an encoder-decoder's config: its decoder's layers, the source's most
    tokens (and the key that says so), what the encoder runs on."""

    decoder_layers: int
    vocab: int | None  # the decoder's vocabulary where it has its own (Marian's decoder_vocab_size); None: vocab_size
    source_tokens: int  # 0 where no key names the most (T5's relative positions): --source-len sizes a source
    source_key: str
    runs_on: Literal["source", "audio"]
    model_class: Any
    fixed: bool = False  # the encoder always hands on source_tokens: it pads every input to its window (Whisper's)


def _positive(config: PretrainedConfig, key: str) -> int | None:
    value = getattr(config, key, None)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _nested(config: PretrainedConfig, half: str) -> PretrainedConfig | None:
    """An encoder-decoder's `half` ("encoder", "decoder") where its config holds one of its own (T5Gemma's)."""
    found = getattr(config, half, None)
    return found if isinstance(found, PretrainedConfig) else None


def seq2seq_class(model_type: str) -> tuple[Any, Literal["source", "audio"]] | None:
    """transformers' auto class that builds `model_type` as an encoder-decoder with its head, and
    what its encoder runs on; None where none does."""
    for mapping, auto, runs_on in _SEQ2SEQ:
        if model_type in getattr(modeling_auto, mapping, {}) and hasattr(transformers, auto):
            return getattr(transformers, auto), runs_on  # type: ignore[return-value]
    return None


def encoder_decoder_of(hf_config: PretrainedConfig) -> EncoderDecoder | Message | None:
    """The encoder-decoder `hf_config` describes; None for a decoder alone; a Message saying why
    ffn cannot lay it out (no Seq2Seq class builds it, or no decoder_layers names its decoder's depth)."""
    if getattr(hf_config, "is_encoder_decoder", False) is not True:
        return None
    found = seq2seq_class(str(hf_config.model_type))
    # T5's and ProphetNet's num_decoder_layers; T5Gemma's, its decoder's own config's num_hidden_layers
    decoder, encoder = (_nested(hf_config, half) for half in ("decoder", "encoder"))
    layers = _positive(hf_config, "decoder_layers") or _positive(hf_config, "num_decoder_layers")
    # a nested decoder's own decoder_layers first: an MBart decoder's num_hidden_layers names its encoder_layers (Donut's)
    layers = layers or ((_positive(decoder, "decoder_layers") or _positive(decoder, "num_hidden_layers")) if decoder is not None else None)
    layers = layers or _positive(hf_config.get_text_config(), "decoder_layers")  # Florence-2's BART, Pix2Struct's text model
    if found is None:
        return Message(N_("an encoder and a decoder (is_encoder_decoder) that no Seq2Seq class of transformers builds"))
    if layers is None:
        return Message(N_("an encoder and a decoder (is_encoder_decoder) whose config names no decoder_layers of 1 or more: "
                          "ffn cannot tell its decoder's layers"))  # fmt: skip
    model_class, runs_on = found
    vocab = _positive(hf_config, "decoder_vocab_size")
    fixed = hf_config.model_type in _PADDED_TO_THE_MOST
    for key in ("max_source_positions", "max_encoder_position_embeddings", "max_position_embeddings"):  # LED: its encoder's own
        tokens = _positive(hf_config, key)
        if tokens is not None:
            return EncoderDecoder(layers, vocab, tokens, key, runs_on, model_class, fixed=fixed)
    tokens = _positive(encoder, "max_position_embeddings") if encoder is not None else None  # T5Gemma's encoder's own config
    if tokens is not None:
        return EncoderDecoder(layers, vocab, tokens, "encoder.max_position_embeddings", runs_on, model_class, fixed=fixed)
    return EncoderDecoder(layers, vocab, 0, "", runs_on, model_class)  # T5's relative positions: --source-len sizes it


def half_of(model: nn.Module, getter: Literal["get_encoder", "get_decoder"]) -> tuple[str, nn.Module] | None:
    """A built encoder-decoder's encoder or decoder and its path (model.encoder, model.decoder), by
    transformers' own get_encoder and get_decoder; None where the model names none."""
    get: Any = getattr(model, getter, None)
    half = get() if callable(get) else None
    path = next((n for n, m in model.named_modules() if m is half and n), None)
    return (path, half) if path is not None and isinstance(half, nn.Module) else None
