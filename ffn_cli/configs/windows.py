"""Which keys each layer's attention reads: causal or not, and sliding windows.

Read from the config as transformers reads it (Llama 4's chunked attention likewise): an
explicit `layer_types` list wins; else the family's rule (its `Family`'s window, sliding rule,
full_every and chunk: Gemma 2 and gpt-oss alternate sliding and full layers starting with a
sliding one, Gemma 3 makes every sixth layer full, Gemma 3n every fifth, Command R7B and
EXAONE 4 every fourth; SmolLM3 slides only with use_sliding_window; Qwen2/Qwen3 slide only
with use_sliding_window, from max_window_layers on; Mistral, Phi-3, Starcoder2 and Mixtral
slide in every layer when sliding_window is set). A window of w lets a query read its w latest
keys, itself included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ffn_cli.configs.families import AttentionReach, family_of

__all__ = ["attention_chunks", "attention_windows", "is_causal"]


def _reach(model_type: str) -> AttentionReach:
    """The family's reach; a model_type no family reads gets the default (causal, windows only
    where layer_types names them)."""
    family = family_of(model_type)
    return family.reach if family is not None else AttentionReach()


def is_causal(model_type: str) -> bool:
    return _reach(model_type).causal


def _text(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    text = config.get("text_config")
    model_type = str(config.get("model_type", ""))
    if isinstance(text, Mapping):
        return text, str(text.get("model_type") or model_type)
    return config, model_type


def attention_windows(config: Mapping[str, Any], n_layers: int) -> tuple[int | None, ...]:
    """Each layer's sliding window in keys, or None for a layer that reads every earlier key."""
    text, model_type = _text(config)
    reach = _reach(model_type)
    window = text.get("sliding_window", reach.window)
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        return (None,) * n_layers
    if reach.sliding == "flagged" and not text.get("use_sliding_window", False):
        return (None,) * n_layers
    types = text.get("layer_types")
    if isinstance(types, list) and len(types) == n_layers:
        return tuple(window if t == "sliding_attention" else None for t in types)
    if reach.sliding == "pattern" and reach.full_every is not None:
        period = text.get("sliding_window_pattern", reach.full_every)
        period = period if isinstance(period, int) and period > 0 else reach.full_every
        return tuple(window if (i + 1) % period else None for i in range(n_layers))
    if reach.sliding == "max_window_layers":
        if not text.get("use_sliding_window", False):
            return (None,) * n_layers
        start = text.get("max_window_layers", n_layers)
        start = start if isinstance(start, int) else n_layers
        return tuple(window if i >= start else None for i in range(n_layers))
    if reach.sliding == "every_layer":
        return (window,) * n_layers
    return (None,) * n_layers


def attention_chunks(config: Mapping[str, Any], n_layers: int) -> tuple[int | None, ...]:
    """Each layer's attention chunk (Llama 4: a query reads only the keys of its own chunk of
    attention_chunk_size tokens, in the layers that use rotary positions), or None."""
    text, model_type = _text(config)
    reach = _reach(model_type)
    chunk = text.get("attention_chunk_size", reach.chunk)
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        return (None,) * n_layers
    types = text.get("layer_types")
    if isinstance(types, list) and len(types) == n_layers:
        return tuple(chunk if t == "chunked_attention" else None for t in types)
    if reach.chunk is None:
        return (None,) * n_layers
    no_rope = text.get("no_rope_layers")
    if not (isinstance(no_rope, list) and len(no_rope) == n_layers):
        interval = text.get("no_rope_layer_interval", 4)
        interval = interval if isinstance(interval, int) and interval > 0 else 4
        no_rope = [int((i + 1) % interval != 0) for i in range(n_layers)]
    # transformers' flag is 1 where the layer keeps rotary positions, and those layers are chunked.
    return tuple(chunk if flag else None for flag in no_rope)
