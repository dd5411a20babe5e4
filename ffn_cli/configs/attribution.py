"""Which part of a model a parameter belongs to, from module names and types alone.

A model ffn has no reader for is counted from its built modules; this is the rule that sorts
each parameter into embeddings, attention, FFN, norms, head, pooler or "other". Pure Python:
it sees names and class names, never tensors, so the rule is testable without torch and the
same rule is printed beside the counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ffn_cli.i18n import N_

__all__ = ["RULES", "BuiltKind", "Owner", "attribute", "is_experts", "pattern"]

BuiltKind = Literal["vision", "embedding", "attention", "ffn", "norm", "head", "pooler", "other"]

# The rule, in the order it is applied: the first line that matches decides. The first two
# look at the module holding the parameter; the others at every module on its path.
RULES: tuple[tuple[BuiltKind, str], ...] = (
    (
        "vision",
        N_(
            "under a tower the config describes (its vision_config's: vision_tower, visual, …; its audio_config's: "
            "audio_tower) or the tower's projector: run on images or audio, not on the text's tokens"
        ),
    ),
    (
        "norm",
        N_(
            "held by a module whose class ends in Norm (LayerNorm, RMSNorm, …), or under a *Gated*Norm (its gate: A.X K2's); "
            "a q/k norm inside attention (q_norm, k_norm, q_a_layernorm, kv_a_layernorm) is attention's, as the readers count it"
        ),
    ),
    (
        "embedding",
        N_(
            "held by an nn.Embedding or an *Embedding(s) class; or under a module whose name has a part beginning embed "
            "(embed_tokens, word_embeddings; not unembed)"
        ),
    ),
    ("head", N_("under a module named lm_head / embed_out / head / cls / score / classifier, outside the layers")),
    ("pooler", N_("under a module named pooler, outside the layers")),
    (
        "attention",
        N_(
            "under a module named *attn* / *attention*, or of class *Attention; a token mixer in attention's place, of class "
            "*Mixer / *MambaLayer (Mamba), *ShortConv (LFM2), *RecurrentBlock (RecurrentGemma's RG-LRU) or *LSTMLayer (xLSTM's mLSTM)"
        ),
    ),
    (
        "ffn",
        N_(
            "under a module named *mlp* / *ffn* / feed_forward / *expert* / moe / fc1 / fc2 / DenseReluDense, or of class *MLP / "
            "*FeedForward / *Experts / *MoeBlock / *LayerFF; BERT-style intermediate and the layer's output"
        ),
    ),
    (
        "other",
        N_(
            "everything else, listed by module; whatever a *HyperConnection / *HyperHead holds (DeepSeek-V4's mHC, which mixes "
            "copies of the residual stream, not tokens), or a class ending in Residual, ResidualGate, ResidualScale, "
            "ResidualScaling or MessageGate (a gated residual, a residual's scale or gate, a looped layer's gate on the last "
            "pass's message), wherever it sits"
        ),
    ),
)

_NORM_CLASS = re.compile(r"Norm(alization)?(Gated|1P|\dd)?$")
# A norm whose output a small MLP gates (A.X K2's AXK2GatedRMSNorm): that MLP is the norm's. Not
# any module whose class ends in Norm: DBRX's DbrxNormAttentionNorm wraps its attention.
_GATED_NORM_CLASS = re.compile(r"Gated\w*Norm$")
_EMBEDDING_CLASS = re.compile(r"Embeddings?$")
_HEAD_NAMES = frozenset({"lm_head", "embed_out", "head", "cls", "score", "classifier"})
# A whole part of the name (split at _ and .) that is or begins "embed": embed_tokens,
# word_embeddings, embeddings_project; never "embed" inside another word (altup_unembed_projections).
_EMBEDDING_PART = re.compile(r"^embed", re.IGNORECASE)
_ATTENTION_NAME = re.compile(r"attn|attention", re.IGNORECASE)
# Mamba mixers, short convolutions and Griffin's recurrent blocks mix tokens where other layers
# attend; the readers count them with attention.
_ATTENTION_CLASS = re.compile(r"(Attention|Mixer|MambaLayer|ShortConv|RecurrentBlock|LSTMLayer)$")
_FFN_NAME = re.compile(r"mlp|ffn|feed_?forward|expert|^moe$|^fc[12]$|^DenseReluDense$", re.IGNORECASE)  # T5's the last
_FFN_CLASS = re.compile(r"(MLP|Mlp|FeedForward|FFN|Ffn|Experts|MoeBlock|MoE|SparseMoe|LayerFF|DenseReluDense)$")
_LAYER_INDEX = re.compile(r"^\d+$")
# Hyper-connections (DeepSeek-V4's mHC, Qwen4-Exp's gated residuals) mix copies of the residual
# stream around each sublayer, and residual scales and gates (Zaya's, Ergo's) weigh it: named
# attn_hc, attn_hyper_connection, post_attention_residual_scale, they are neither attention nor FFN.
# A looped layer's gates on the previous pass's message (Inkling 2 Loop's mlp_message_gate) mix the residual stream too.
_RESIDUAL_MIX_CLASS = re.compile(r"Hyper(Connection|Head)$|Residual(Gate|Scaling|Scale)?$|MessageGate$")
# Norms on the queries and keys (Qwen3, Gemma 3, OLMo 2, DeepSeek's MLA) belong to attention.
_QK_NORM_NAME = re.compile(r"^(q|k|kv|q_a|kv_a|query|key)_?(norm|layernorm|layer_norm|ln)$", re.IGNORECASE)


@dataclass(frozen=True)
class Owner:
    """One module on the path from the model to a parameter: its attribute name and class."""

    name: str
    cls: str


def _on_path(kind: BuiltKind, path: tuple[Owner, ...], depth: int) -> bool:
    """Whether module `depth` of `path` marks `kind` for everything under it."""
    module = path[depth]
    if kind in ("head", "pooler"):
        # Outside the layer stack only: Switch Transformers' router is mlp.router.classifier.
        outside = not any(_LAYER_INDEX.match(m.name) for m in path[:depth])
        return outside and (module.name in _HEAD_NAMES if kind == "head" else module.name == "pooler")
    if kind == "embedding":
        return any(_EMBEDDING_PART.match(part) for part in re.split(r"[_.]", module.name))
    if kind == "attention":
        return bool(_ATTENTION_NAME.search(module.name) or _ATTENTION_CLASS.search(module.cls))
    if _FFN_NAME.search(module.name) or _FFN_CLASS.search(module.cls):
        return True
    # BERT and its descendants: layer.N.intermediate (up) and layer.N.output (down, and its
    # LayerNorm, which the norm line takes first); attention.output is attention's.
    return module.name == "intermediate" or (module.name == "output" and depth > 0 and bool(_LAYER_INDEX.match(path[depth - 1].name)))


_BY_PATH: tuple[BuiltKind, ...] = ("head", "pooler", "embedding", "attention", "ffn")


def attribute(path: tuple[Owner, ...], *, is_embedding: bool = False) -> tuple[BuiltKind, int]:
    """The part a parameter belongs to, and how many modules of `path` name the row it goes
    in: the holder for norms and embeddings, else the outermost module that matched (so
    `mlp.experts` shows as `mlp`, GPT-2's `attn.c_attn` as `attn`).

    `path` runs from the model's first child down to the module that holds the parameter;
    `is_embedding` says that module is an nn.Embedding (a type test only torch can make).
    A mixture of attention heads (JetMoE's self_attention.experts) is attention: attention
    is tried before FFN.
    """
    owner = path[-1] if path else Owner("", "")
    if _NORM_CLASS.search(owner.cls):
        in_attention = any(_on_path("attention", path, d) for d in range(len(path) - 1))
        if in_attention and _QK_NORM_NAME.match(owner.name):
            return "attention", next(d for d in range(len(path)) if _on_path("attention", path, d)) + 1
        return "norm", len(path)
    gated = next((d for d, m in enumerate(path[:-1]) if _GATED_NORM_CLASS.search(m.cls)), None)
    if gated is not None:  # a gated norm's gate (A.X K2's AXK2GatedRMSNorm.mlp): the norm's
        return "norm", gated + 1
    if is_embedding or _EMBEDDING_CLASS.search(owner.cls):
        return "embedding", len(path)
    mix = next((d for d, m in enumerate(path) if _RESIDUAL_MIX_CLASS.search(m.cls)), None)
    if mix is not None:
        return "other", mix + 1
    for kind in _BY_PATH:
        depth = next((d for d in range(len(path)) if _on_path(kind, path, d)), None)
        if depth is not None:
            return kind, depth + 1
    # Unplaced: named by the block inside the layer that holds it (model.layers.*.rwkv).
    first = next((i for i, m in enumerate(path) if _LAYER_INDEX.match(m.name)), None)
    return "other", len(path) if first is None else min(len(path), first + 2)


def is_experts(name: str, cls: str) -> bool:
    """A routed experts container (`experts`, or a class ending in Experts), not a shared
    expert, which every token runs. A module named `experts` is routed whatever its class says
    (GraniteMoeShared's GraniteMoeSharedExperts: "Shared" is the family's name)."""
    if "shared" in name.lower():
        return False
    return name == "experts" or (cls.endswith("Experts") and "shared" not in cls.lower())


def pattern(path: tuple[Owner, ...]) -> str:
    """The dotted module name with the layer index (the first index on the path) as *:
    model.layers.*.mlp, encoder.block.*.layer.1 (T5's FFN sub-layer)."""
    names = [m.name for m in path]
    first = next((i for i, name in enumerate(names) if _LAYER_INDEX.match(name)), None)
    if first is not None:
        names[first] = "*"
    return ".".join(names)
