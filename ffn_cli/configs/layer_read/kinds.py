"""Which layers share a kind, read from the config alone (a per-layer list, a list of layer
indices, a rule over layer indices), and the decoder layer classes that build them: the ones
the model's classes keep whole, else the class of the one list of layers the model builds."""

from __future__ import annotations

import importlib
import itertools
import re
from collections.abc import Mapping
from typing import Any

import transformers
from torch import nn
from transformers import PretrainedConfig
from transformers.models.auto import modeling_auto

from ffn_cli.configs.attribution import Owner, attribute
from ffn_cli.configs.layer_read.tensors import beyond_ffn, n_params, towers_of
from ffn_cli.i18n import _

__all__ = ["attends_within", "decoder_layer_classes", "layer_kinds", "listed_layer_classes"]

# Config keys whose integer value is a rule over layer indices (first_k_dense_replace,
# decoder_sparse_step, moe_layer_freq, full_attention_interval, sliding_window_pattern, …).
_LAYER_RULE = re.compile(r"layer|interval|step|freq|replace|pattern|period|every", re.IGNORECASE)
_NOT_A_RULE = frozenset({"num_hidden_layers"})
_SHORT_PERIOD = 16
# Layer classes of a tower beside the decoder, and modules kept whole that are no layer.
_ASIDE = re.compile(r"Vision|Visual|Audio|Encoder|Embed|Patch|Attention$|Mixer$")


def _signature(data: Mapping[str, Any], n_layers: int, layer: int) -> tuple[Any, ...]:
    """What the text config says of layer `layer` alone: equal for two layers of one kind."""
    said: list[Any] = []
    for key, value in sorted(data.items()):
        if isinstance(value, list):
            ints = bool(value) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            # Layer indices, from 0 (Llama 4's moe_layers) or from 1 (Qwen4-Exp's ple_layer_ids): a layer
            # either could name is a kind of its own; kinds that read alike are merged after.
            if ints and value[0] >= 0 and value[-1] <= n_layers and all(a < b for a, b in itertools.pairwise(value)):
                said.append((key, layer in value, layer + 1 in value))
            elif len(value) == n_layers:
                said.append((key, repr(value[layer])))
            elif ints:
                said.append((key, layer in value, layer + 1 in value))
            elif 0 < len(value) < n_layers and all(isinstance(v, str) for v in value):  # a pattern, cycled (RecurrentGemma's block_types)
                said.append((key, value[layer % len(value)]))
        elif isinstance(value, int) and not isinstance(value, bool) and value > 0 and key not in _NOT_A_RULE and _LAYER_RULE.search(key):
            # A short period by the layer's place in it (Jamba's attn_layer_period with its offset).
            said.append((key, layer < value, layer % value if value <= _SHORT_PERIOD else layer % value == 0, (layer + 1) % value == 0))
    return tuple(said)


def layer_kinds(text: PretrainedConfig | Mapping[str, Any], n_layers: int) -> list[tuple[int, ...]]:
    """The layers grouped by what the config says of each, in order of their first layer."""
    data = text if isinstance(text, Mapping) else text.to_dict()
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i in range(n_layers):
        groups.setdefault(_signature(data, n_layers, i), []).append(i)
    return [tuple(g) for g in groups.values()]


def decoder_layer_classes(hf_config: PretrainedConfig) -> tuple[type[nn.Module], ...]:
    """The decoder layer classes the model's causal-LM (else base) class keeps whole on a device
    (its _no_split_modules), from the modeling module that defines them: one, or one a layer
    kind (Jamba's attention and Mamba layers)."""
    text = hf_config.get_text_config()
    for model_type in dict.fromkeys((str(text.model_type), str(hf_config.model_type))):
        for mapping in (modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, modeling_auto.MODEL_MAPPING_NAMES):
            name = mapping.get(model_type)
            cls = getattr(transformers, name, None) if isinstance(name, str) else None
            if cls is None:
                continue
            module = importlib.import_module(cls.__module__)
            kept = [n for n in sorted(getattr(cls, "_no_split_modules", None) or ()) if hasattr(module, n)]
            names = [n for n in kept if not _ASIDE.search(n)]
            found = [getattr(module, n) for n in names if n.endswith(("DecoderLayer", "HybridLayer"))]
            if not found:  # GPT-2's GPT2Block, DBRX's DbrxBlock, Mamba-2's Mamba2Block
                found = [getattr(module, n) for n in names if n.endswith(("Block", "Layer"))]
            if found:
                return tuple(found)
    return ()


def listed_layer_classes(model: nn.Module, n_layers: int, source: str) -> tuple[type[nn.Module], ...]:
    """The class of the one list of num_hidden_layers layers the whole model built, for a model
    whose classes name none to keep whole (BERT's BertLayer, BioGPT's, CTRL's); a tower's lists
    are the tower's (Qwen2.5-Omni's talker, a decoder as deep as its text model)."""
    towers = towers_of(model)
    lists = [m for n, m in model.named_modules() if isinstance(m, nn.ModuleList) and len(m) == n_layers
             and len({type(x) for x in m}) == 1 and not towers.path(n)]  # fmt: skip
    lists = [m for m in lists if n_params(m[0]) and attends_within(m[0])]
    if len(lists) > 1:  # two decoders, each its own cache
        paths = [n for n, m in model.named_modules() if any(m is x for x in lists)]
        why = _("it builds {n} lists of num_hidden_layers decoder layers ({paths}): ffn lays out one decoder")
        raise beyond_ffn(source, why.format(n=len(lists), paths=", ".join(paths)))
    if len(lists) != 1:
        why = _("transformers names no decoder layer class for it, and it builds no one list of num_hidden_layers layers: "
                "its layout cannot be read layer by layer")  # fmt: skip
        raise beyond_ffn(source, why)
    return (type(lists[0][0]),)


def attends_within(layer: nn.Module) -> bool:
    """A layer that holds a token mixer somewhere inside it (a list of attentions alone is no layer: XLM's)."""
    return any(attribute((Owner(n.rpartition(".")[2], type(m).__name__),))[0] == "attention" for n, m in layer.named_modules() if n)
