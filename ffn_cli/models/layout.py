"""Every tensor a ModelSpec places, walked once: what it is, where it sits, how many there are
and what decides how it is stored. Counting (count.py), weight bytes (weights.py, the MTP
layers of shipped.py, and through them the per-GPU shares of rank_memory.py), the roofline's
weight reads (roofline.py, gpu_roofline.py) and the widest intermediate (parallel_layout.py)
are folds over this walk, so a new kind of tensor is placed here alone.

The walk runs in the model's order, a block at a time: the embeddings and the family's tensors
beside the layers, each layer kind's token mixer, FFN, own tensors and norms, the final norm,
the head, the pooler and a vision tower. A block is one row of `ffn params`' parts table: the
tensors it holds in each of its layers. Only parameters are placed: causal-mask and rotary
`inv_freq` buffers are none, and a tied head is placed as tied, holding nothing of its own.
Pure Python.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from math import prod
from typing import Literal

from ffn_cli.accounting import ParamTensor, param_tensors
from ffn_cli.attention import AnyAttention, AttentionSpec, LatentAttentionSpec
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.i18n import N_
from ffn_cli.models.spec import NORM_KINDS, ExtraPart, ModelSpec
from ffn_cli.spec import FFNSpec
from ffn_cli.variants.mixture import ROUTER_WEIGHT
from ffn_cli.variants.moe import LATENT_DOWN, LATENT_UP

__all__ = [
    "Block",
    "PartKind",
    "PlacedTensor",
    "Role",
    "attention_tensors",
    "blocks",
    "extra_tensors",
    "ffn_role",
    "ffn_tensors",
    "mixer_tensors",
    "model_layout",
]

# What a tensor counts as in the parts table ("other": a family's tensors that are none of
# these, Gemma 3n's AltUp, Laurel and per-layer inputs).
PartKind = Literal["embedding", "attention", "ffn", "norm", "head", "pooler", "vision", "other"]
# What a quantizer chooses a tensor by: gpt-oss quantizes only "experts", DeepSeek-V3 every
# linear but its "router", "embedding" and "head". A 1-D tensor (bias, norm) is a "vector",
# never quantized; a vision tower is placed by part, as one "vision".
# "source": an encoder-decoder's encoder's tensors beside its linears and tables (Whisper's convolutions).
Role = Literal[
    "embedding", "head", "attention", "router", "experts", "shared", "latent", "dense_ffn", "vector", "vision", "source", "other"
]

# Block names, English ids marked for translation: the parts table's rows.
TOKEN_EMBEDDINGS = N_("token embeddings")
POSITION_EMBEDDINGS = N_("position embeddings")
TOKEN_TYPE_EMBEDDINGS = N_("token-type embeddings")
EMBEDDING_NORM = N_("embedding norm")
ATTENTION = N_("attention")
SHARED_KV_ATTENTION = N_("attention, shared KV")
CROSS_ATTENTION = N_("cross-attention")
# The layers that run an earlier layer's weights (Zamba's shared blocks, Inkling 2 Loop's later passes): held by that layer.
REAPPLIED = N_("shared blocks, run again")
LAYER_NORMS = N_("layer norms")
FINAL_NORM = N_("final norm")
LM_HEAD = N_("LM head")
POOLER = N_("pooler")

_EXPERT = re.compile(r"^experts\.\d+\.")
# The roles of a Linear's weight, which quantizers replace (weights.py's "linears" scope).
_LINEAR_ROLES = frozenset({"attention", "experts", "shared", "latent", "dense_ffn"})
# A parameter the layout names "module (leaf)", no Linear's: not "q_proj.weight (output gate half)".
_NOT_A_LINEAR = re.compile(r"^(?![^ ]*\.(weight|bias) \()[^ ]* \(")


@dataclass(frozen=True)
class PlacedTensor:
    """One tensor of the model in every place it sits: `copies` identical ones (a MoE layer's
    routed experts, a norm kind's norms, Gemma 3n's AltUp projections) in each of `layers`, or
    once in the model when `layers` is None. `block` names the row it is counted in, `part` the
    kind of that row; `role` decides the format a StoragePlan stores it in (weights.py). A
    `tied` tensor shares another's storage (a tied LM head): it holds none of its own, and its
    role is that of the tensor it shares."""

    block: str
    part: PartKind
    name: str  # as the model's module names it, experts without their index: "experts.gate_proj.weight"
    shape: tuple[int, ...]
    role: Role
    layers: tuple[int, ...] | None = None
    copies: int = 1
    tied: bool = False
    # A key or value projection's KV heads: --tp splits it by head, a GPU holding ceil(heads / tp)
    # of them (a head copied where --tp exceeds them, as vLLM copies it); 0 for any other tensor.
    kv_heads: int = 0
    # MLA's down projections (q_a_proj, kv_a_proj_with_mqa) and a latent MoE's projections into and
    # out of its latent: whole on every GPU of --tp, as vLLM and SGLang hold them (ReplicatedLinear).
    whole: bool = False

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def instances(self) -> int:
        """How many of it the model holds: its copies in each of its layers, or in the model."""
        return self.copies * (1 if self.layers is None else len(self.layers))

    @property
    def params(self) -> int:
        """Its parameters in the model: none of its own when tied."""
        return 0 if self.tied else self.numel * self.instances


@dataclass(frozen=True)
class Block:
    """The tensors of one row: one block of `part` named `name` in each of `layers` (once in the
    model when None)."""

    name: str
    part: PartKind
    layers: tuple[int, ...] | None
    tensors: tuple[PlacedTensor, ...]

    @property
    def params(self) -> int:
        return sum(t.params for t in self.tensors)


def ffn_role(name: str) -> Role:
    """The role of an FFN tensor, from its name as build_ffn names it."""
    head = name.split(".")[0]
    if head == "experts":
        return "experts"
    if head.startswith("shared_expert"):
        return "router" if head == "shared_expert_gate" else "shared"
    if head in (LATENT_DOWN, LATENT_UP):
        return "latent"
    return "router" if head == "router" else "dense_ffn"


def _place(
    block: str, part: PartKind, role: Role, tensors: Iterable[ParamTensor], layers: tuple[int, ...] | None = None, copies: int = 1
) -> Iterator[PlacedTensor]:
    for t in tensors:
        yield _one(block, part, role, t.name, t.shape, layers=layers, copies=copies)


def _one(
    block: str,
    part: PartKind,
    role: Role,
    name: str,
    shape: tuple[int, ...],
    layers: tuple[int, ...] | None = None,
    copies: int = 1,
    tied: bool = False,
) -> PlacedTensor:
    """One tensor placed: a 1-D one (a bias, a norm) is a "vector" whatever its block's role; one
    that is no Linear's weight in a block of linears (a conv's taps, more than 2-D; a parameter the
    layout names "module (leaf)", DeepSeek-V4's position bias) is "other", as a quantizer that
    replaces Linear layers leaves it."""
    if len(shape) < 2:
        role = "vector"
    elif role in _LINEAR_ROLES and (len(shape) > 2 or _NOT_A_LINEAR.match(name)):
        role = "other"
    return PlacedTensor(block, part, name, shape, role, layers, copies, tied)


# --- the blocks, each placed in one place --------------------------------------------------


# MLA's projections down to its query and key-value latents, whole on every GPU of --tp.
_MLA_DOWN = ("q_a_proj.", "kv_a_proj_with_mqa.")


def _whole_on_every_gpu(p: PlacedTensor, attention: AnyAttention) -> bool:
    """MLA's down projections, and DeepSeek-V4's to its latent and its one shared head."""
    if isinstance(attention, LatentAttentionSpec):
        return p.role == "attention" and p.name.startswith(_MLA_DOWN)
    return isinstance(attention, CompressedAttentionSpec) and p.role != "vector" and attention.whole_on_every_gpu(p.name)


def attention_tensors(spec: ModelSpec, layers: tuple[int, ...], *, shared_kv: bool = False) -> tuple[PlacedTensor, ...]:
    """The attention block in `layers` (of one shape): its AttentionSpec's tensors and the tensors
    beside it; a KV-shared layer's without the keys' and values' (it reads an earlier layer's)."""
    first = layers[0] if layers else None
    if first is None:
        tensors = (*spec.attention.tensors(), *spec.attention_extra)
    else:
        tensors = (*spec.attention_of(first).tensors(), *spec.attention_extra_of(first))
    if shared_kv:
        kv = spec.kv_tensors_of(layers[0]) if layers else ()
        return tuple(_place(SHARED_KV_ATTENTION, "attention", "attention", (t for t in tensors if t not in kv), layers))
    attention = spec.attention if first is None else spec.attention_of(first)
    heads = attention.kv_heads if isinstance(attention, AttentionSpec) else 0  # MLA's and V4's projections are no heads'
    placed = []
    for p in _place(ATTENTION, "attention", "attention", tensors, layers):
        if p.role == "attention" and heads and p.name.startswith(("k_proj.", "v_proj.")):
            p = replace(p, kv_heads=heads)
        elif _whole_on_every_gpu(p, attention):
            p = replace(p, whole=True)
        elif p.role == "attention" and ".router." in f".{p.name}":  # a mixture of heads' router (JetMoE's): a router's
            p = replace(p, role="router")
        placed.append(p)
    return tuple(placed)


def mixer_tensors(spec: ModelSpec, layers: tuple[int, ...] | None = None) -> tuple[PlacedTensor, ...]:
    """A hybrid's token mixer in its layers (or in `layers` of them), then its own norms, stored as
    its tensors are (none without a mixer)."""
    m = spec.mixer
    if m is None:
        return ()
    layers = m.layers if layers is None else layers
    norms = _place(m.kind, "norm", "attention", m.norm_tensors, layers) if m.norm_params else ()
    return (*_place(m.kind, "attention", "attention", m.tensors, layers), *norms)


def _held_mixer_tensors(spec: ModelSpec) -> tuple[PlacedTensor, ...]:
    """The mixer in the layers that hold it: not in a layer that runs another's whole layer."""
    if spec.mixer is None:
        return ()
    reused = set(spec.reused_layers) if spec.reused_whole else set()
    held = tuple(i for i in spec.mixer.layers if i not in reused)
    return mixer_tensors(spec, held) if held else ()


def ffn_tensors(spec: ModelSpec, ffn: FFNSpec, layers: tuple[int, ...] | None = None) -> tuple[PlacedTensor, ...]:
    """One FFN's block in `layers` (the layers that use it, unless given): each routed expert's
    tensors folded into one with E copies, then the tensors each MoE layer holds beside its
    FFNSpec's (moe_extra), routers all."""
    if layers is None:
        layers = tuple(i for i in spec.ffn_layers if spec.ffn_of(i) is ffn)
    experts: dict[tuple[str, tuple[int, ...]], int] = {}
    order: list[ParamTensor] = []
    for t in param_tensors(ffn):
        if t.name == ROUTER_WEIGHT and spec.dropped_router(ffn):  # a router of its own, in moe_extra (Zaya's)
            continue
        if _EXPERT.match(t.name):
            key = (_EXPERT.sub("experts.", t.name), t.shape)
            if key not in experts:
                order.append(ParamTensor(*key))
            experts[key] = experts.get(key, 0) + 1
        else:
            order.append(t)
    block = ffn.info.part_name
    placed = [_one(block, "ffn", ffn_role(t.name), t.name, t.shape, layers=layers, copies=experts.get((t.name, t.shape), 1)) for t in order]
    placed = [replace(p, whole=True) if p.role == "latent" else p for p in placed]
    return (*placed, *_place(block, "ffn", "router", spec.extra_of(ffn), layers))


def extra_tensors(spec: ModelSpec, extra: ExtraPart, *, held: bool = False) -> tuple[PlacedTensor, ...]:
    """A family's own part (Gemma 3n's AltUp, Laurel, per-layer inputs), in every layer that runs it
    or beside them; `held`: in the layers that hold it (a shared part's, not those that run it again)."""
    layers = spec.held_layers_of(extra) if held else spec.layers_of(extra)
    if extra.kind == "vision":  # a modality's experts, stored and divided over --ep as the routed ones; their router's, whole
        return tuple(
            _one(extra.name, "vision", "experts" if ".experts." in t.name else "router", t.name, t.shape, layers, extra.copies)
            for t in extra.tensors
        )
    # attention experts a token does not pick (JetMoE's): stored and split as the attention's projections
    role: Role = "embedding" if extra.kind == "embedding" else "attention" if extra.kind == "attention" else "other"
    return tuple(_place(extra.name, extra.kind, role, extra.tensors, layers, extra.copies))


# --- the walk ------------------------------------------------------------------------------


def _embeddings(spec: ModelSpec) -> Iterator[PlacedTensor]:
    d = spec.embedding_width  # d_model, or a factorized table's narrower width
    yield _one(TOKEN_EMBEDDINGS, "embedding", "embedding", "embed_tokens.weight", (spec.vocab_size, d))
    if spec.max_positions:
        yield _one(POSITION_EMBEDDINGS, "embedding", "embedding", "position_embeddings.weight", (spec.max_positions, d))
    if spec.type_vocab_size:
        yield _one(TOKEN_TYPE_EMBEDDINGS, "embedding", "embedding", "token_type_embeddings.weight", (spec.type_vocab_size, d))
    if spec.embedding_norm:
        yield _one(EMBEDDING_NORM, "norm", "vector", "embeddings.norm", (NORM_KINDS[spec.norm] * d,))
    for e in spec.extras:
        if not e.per_layer:
            yield from extra_tensors(spec, e, held=True)


def _token_mixers(spec: ModelSpec) -> Iterator[PlacedTensor]:
    """Attention in its layers (the KV-shared ones apart), a hybrid's mixer in its own, and
    GPT-2's cross-attention in every layer."""
    shared = set(spec.kv_shared_layers)
    reused = set(spec.reused_layers)  # placed by _reapplied
    groups = spec.attention_groups  # one block a shape (Gemma 4's sliding and full layers)
    for _attention, _extra, layers in groups:
        yield from attention_tensors(spec, tuple(i for i in layers if i not in shared | reused))
    for _attention, _extra, layers in groups:  # the KV-shared layers of each shape (Gemma 4's E2B and E4B)
        if mine := tuple(i for i in layers if i in shared - reused):
            yield from attention_tensors(spec, mine, shared_kv=True)
    yield from (t for t in _held_mixer_tensors(spec) if t.part == "attention")
    if spec.cross_attention:
        yield from _place(CROSS_ATTENTION, "attention", "attention", spec.attention.tensors(), tuple(range(spec.n_layers)))


def _reapplied(spec: ModelSpec) -> Iterator[PlacedTensor]:
    """The layers that run an earlier layer's weights (weights_from): that layer's attention, FFN and
    shared parts (and with reused_whole its mixer and norms), each tied to the tensor it holds:
    computed and read here, held there."""
    reused = set(spec.reused_layers)
    if not reused:
        return
    placed: list[PlacedTensor] = []
    for _attention, _extra, layers in spec.attention_groups:
        if mine := tuple(i for i in layers if i in reused):
            placed += attention_tensors(spec, mine)
    for ffn, layers in spec.ffn_groups:
        if mine := tuple(i for i in layers if i in reused):
            placed += ffn_tensors(spec, ffn, mine)
    for e in spec.extras:
        if e.shared and (mine := tuple(i for i in spec.layers_of(e) or () if i in reused)):
            placed += (replace(t, layers=mine) for t in extra_tensors(spec, e))
    if spec.reused_whole:  # the later passes of a looped layer: its mixer and norms too
        if spec.mixer is not None and (mine := tuple(i for i in spec.mixer.layers if i in reused)):
            placed += mixer_tensors(spec, mine)
        placed.append(
            _one(LAYER_NORMS, "norm", "vector", "norm", (spec.norm_params,), layers=tuple(sorted(reused)), copies=spec.norms_per_layer)
        )
    # one row: tied, they hold nothing, in every layer that runs another's weights
    every = tuple(sorted(reused))
    yield from (replace(t, block=REAPPLIED, part="other", layers=every, tied=True) for t in placed)


def _layers(spec: ModelSpec) -> Iterator[PlacedTensor]:
    yield from _token_mixers(spec)
    reused = set(spec.reused_layers)
    for ffn, layers in spec.ffn_groups:
        if held := tuple(i for i in layers if i not in reused):
            yield from ffn_tensors(spec, ffn, held)
    for e in spec.extras:
        if e.per_layer and spec.held_layers_of(e):
            yield from extra_tensors(spec, e, held=True)
    yield from _reapplied(spec)
    passes = set(spec.reused_layers) if spec.reused_whole else set()  # a later pass holds no norms of its own
    every = tuple(i for i in range(spec.n_layers) if i not in passes)
    yield _one(LAYER_NORMS, "norm", "vector", "norm", (spec.norm_params,), layers=every, copies=spec.norms_per_layer)
    yield from (t for t in _held_mixer_tensors(spec) if t.part == "norm")


def _top(spec: ModelSpec) -> Iterator[PlacedTensor]:
    d, v = spec.d_model, spec.head_rows
    if spec.final_norm:
        yield _one(FINAL_NORM, "norm", "vector", "norm", (spec.norm_params,))
    if spec.lm_head:
        tied = spec.tie_word_embeddings
        yield _one(LM_HEAD, "head", "embedding" if tied else "head", "lm_head.weight", (v, spec.head_width), tied=tied)
        if spec.lm_head_bias:
            yield _one(LM_HEAD, "head", "vector", "lm_head.bias", (v,))
    if spec.pooler:
        yield _one(POOLER, "pooler", "head", "pooler.dense.weight", (d, d))
        yield _one(POOLER, "pooler", "vector", "pooler.dense.bias", (d,))
    if spec.vision is not None:  # placed by part, not by tensor: a tower is kept in the rest's format
        for p in spec.vision.parts:
            if p.tensors:  # an encoder-decoder's encoder, tensor by tensor: its linears and tables as the decoder's
                yield from (_one(p.name, "vision", _ENCODER_ROLES.get(kind, "source"), t.name, t.shape) for t, kind in p.tensors)
            else:
                yield PlacedTensor(p.name, "vision", p.name, (p.params_each,), "vision", copies=p.copies)


# An encoder's tensor's role by its kind: its attention's and FFN's linears and its tables split over
# --tp and stored as the decoder's are; the rest ("source": Whisper's convolutions over the input)
# kept whole on every GPU in the rest's format, as a tower's is.
_ENCODER_ROLES: dict[str, Role] = {"attention": "attention", "ffn": "dense_ffn", "embedding": "embedding"}


def model_layout(spec: ModelSpec) -> tuple[PlacedTensor, ...]:
    """Every tensor `spec` places, in the model's order."""
    return (*_embeddings(spec), *_layers(spec), *_top(spec))


def blocks(placed: Iterable[PlacedTensor]) -> list[Block]:
    """The walk by row: the tensors of one block name, part and layers, in the order they first come."""
    found: dict[tuple[str, str, tuple[int, ...] | None], list[PlacedTensor]] = {}
    for t in placed:
        found.setdefault((t.block, t.part, t.layers), []).append(t)
    return [Block(name, tensors[0].part, layers, tuple(tensors)) for (name, _part, layers), tensors in found.items()]
