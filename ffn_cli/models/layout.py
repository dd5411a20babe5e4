"""Every tensor a ModelSpec places, walked once: what it is, where it sits, how many there are
and what decides how it is stored. Counting (count.py), weight bytes (weights.py) and through
them the per-GPU shares are folds over this walk, so a new kind of tensor is placed here alone.

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
from dataclasses import dataclass
from math import prod
from typing import Literal

from ffn_cli.accounting import ParamTensor, param_tensors
from ffn_cli.i18n import N_
from ffn_cli.models.spec import ModelSpec
from ffn_cli.spec import FFNSpec

__all__ = [
    "Block",
    "PartKind",
    "PlacedTensor",
    "Role",
    "blocks",
    "ffn_role",
    "model_layout",
]

# What a tensor counts as in the parts table ("other": a family's tensors that are none of
# these, Gemma 3n's AltUp, Laurel and per-layer inputs).
PartKind = Literal["embedding", "attention", "ffn", "norm", "head", "pooler", "vision", "other"]
# What a quantizer chooses a tensor by: gpt-oss quantizes only "experts", DeepSeek-V3 every
# linear but its "router", "embedding" and "head". A 1-D tensor (bias, norm) is a "vector",
# never quantized; a vision tower is placed by part, as one "vision".
Role = Literal["embedding", "head", "attention", "router", "experts", "shared", "dense_ffn", "vector", "vision", "other"]

# Block names, English ids marked for translation: the parts table's rows.
TOKEN_EMBEDDINGS = N_("token embeddings")
POSITION_EMBEDDINGS = N_("position embeddings")
TOKEN_TYPE_EMBEDDINGS = N_("token-type embeddings")
EMBEDDING_NORM = N_("embedding norm")
ATTENTION = N_("attention")
SHARED_KV_ATTENTION = N_("attention, shared KV")
CROSS_ATTENTION = N_("cross-attention")
LAYER_NORMS = N_("layer norms")
FINAL_NORM = N_("final norm")
LM_HEAD = N_("LM head")
POOLER = N_("pooler")

_EXPERT = re.compile(r"^experts\.\d+\.")


@dataclass(frozen=True)
class PlacedTensor:
    """One tensor of the model in every place it sits: `copies` identical ones (a MoE layer's
    routed experts, a norm kind's norms, Gemma 3n's AltUp projections) in each of `layers`, or
    once in the model when `layers` is None. `block` names the row it is counted in, `part` the kind of
    that row; `role` decides its storage, unless `stored` names a format no plan changes. A
    `tied` tensor shares another's storage (a tied LM head): it holds no parameters of its own."""

    block: str
    part: PartKind
    name: str  # as the model's module names it, experts without their index: "experts.gate_proj.weight"
    shape: tuple[int, ...]
    role: Role
    layers: tuple[int, ...] | None = None
    copies: int = 1
    stored: str = ""
    tied: bool = False

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
    return "router" if head == "router" else "dense_ffn"


def _place(
    block: str, part: PartKind, role: Role, tensors: Iterable[ParamTensor], layers: tuple[int, ...] | None = None, copies: int = 1
) -> Iterator[PlacedTensor]:
    for t in tensors:
        yield PlacedTensor(block, part, t.name, t.shape, "vector" if len(t.shape) < 2 else role, layers, copies)


def _one(block: str, part: PartKind, role: Role, name: str, shape: tuple[int, ...], **kw: object) -> PlacedTensor:
    return PlacedTensor(block, part, name, shape, "vector" if len(shape) < 2 else role, **kw)  # type: ignore[arg-type]


def _ffn_tensors(spec: ModelSpec, ffn: FFNSpec, layers: tuple[int, ...]) -> Iterator[PlacedTensor]:
    """One FFN's tensors in `layers`, each routed expert's folded into one with E copies, and the
    tensors each MoE layer holds beside its FFNSpec's (moe_extra), routers all."""
    block = ffn.info.part_name
    experts: dict[tuple[str, tuple[int, ...]], int] = {}
    order: list[ParamTensor] = []
    for t in param_tensors(ffn):
        if _EXPERT.match(t.name):
            key = (_EXPERT.sub("experts.", t.name), t.shape)
            if key not in experts:
                order.append(ParamTensor(key[0], t.shape))
            experts[key] = experts.get(key, 0) + 1
        else:
            order.append(t)
    for t in order:
        copies = experts.get((t.name, t.shape), 1) if t.name.startswith("experts.") else 1
        yield from _place(block, "ffn", ffn_role(t.name), (t,), layers, copies)
    yield from _place(block, "ffn", "router", spec.extra_of(ffn), layers)


def _embeddings(spec: ModelSpec) -> Iterator[PlacedTensor]:
    d = spec.d_model
    yield _one(TOKEN_EMBEDDINGS, "embedding", "embedding", "embed_tokens.weight", (spec.vocab_size, d))
    if spec.max_positions:
        yield _one(POSITION_EMBEDDINGS, "embedding", "embedding", "position_embeddings.weight", (spec.max_positions, d))
    if spec.type_vocab_size:
        yield _one(TOKEN_TYPE_EMBEDDINGS, "embedding", "embedding", "token_type_embeddings.weight", (spec.type_vocab_size, d))
    if spec.embedding_norm:
        yield _one(EMBEDDING_NORM, "norm", "vector", "embeddings.norm", (spec.norm_params,))


def _extras(spec: ModelSpec, *, per_layer: bool) -> Iterator[PlacedTensor]:
    """A family's own tensors (Gemma 3n's AltUp, Laurel, per-layer inputs), beside the layers or in each."""
    layers = tuple(range(spec.n_layers)) if per_layer else None
    for e in spec.extras:
        if e.per_layer == per_layer:
            yield from _place(e.name, e.kind, "embedding" if e.kind == "embedding" else "other", e.tensors, layers, e.copies)


def _mixers(spec: ModelSpec) -> Iterator[PlacedTensor]:
    """Attention in its layers (the KV-shared ones without k/v), a hybrid's mixer in its own, and
    GPT-2's cross-attention in every layer."""
    tensors = (*spec.attention.tensors(), *spec.attention_extra)
    shared = tuple(i for i in spec.attention_layers if i in spec.kv_shared_layers)
    own = tuple(i for i in spec.attention_layers if i not in shared)
    yield from _place(ATTENTION, "attention", "attention", tensors, own)
    if shared:
        yield from _place(SHARED_KV_ATTENTION, "attention", "attention", (t for t in tensors if t not in spec.kv_tensors), shared)
    if spec.mixer is not None:
        yield from _place(spec.mixer.kind, "attention", "attention", spec.mixer.tensors, spec.mixer.layers)
    if spec.cross_attention:
        yield from _place(CROSS_ATTENTION, "attention", "attention", spec.attention.tensors(), tuple(range(spec.n_layers)))


def _layers(spec: ModelSpec) -> Iterator[PlacedTensor]:
    yield from _mixers(spec)
    groups = [*spec.dense_groups, *([(spec.moe_ffn, spec.moe_layers)] if spec.moe_ffn is not None and spec.moe_layers else [])]
    for ffn, layers in groups:
        yield from _ffn_tensors(spec, ffn, layers)
    yield from _extras(spec, per_layer=True)
    every = tuple(range(spec.n_layers))
    yield _one(LAYER_NORMS, "norm", "vector", "norm", (spec.norm_params,), layers=every, copies=spec.norms_per_layer)
    if spec.mixer is not None and spec.mixer.norm_params:  # a mixer's own norms, stored as its tensors are
        yield from _place(spec.mixer.kind, "norm", "attention", spec.mixer.norm_tensors, spec.mixer.layers)


def _top(spec: ModelSpec) -> Iterator[PlacedTensor]:
    d, v = spec.d_model, spec.vocab_size
    if spec.final_norm:
        yield _one(FINAL_NORM, "norm", "vector", "norm", (spec.norm_params,))
    if spec.lm_head:
        yield _one(LM_HEAD, "head", "head", "lm_head.weight", (v, d), tied=spec.tie_word_embeddings)
        if spec.lm_head_bias:
            yield _one(LM_HEAD, "head", "vector", "lm_head.bias", (v,))
    if spec.pooler:
        yield _one(POOLER, "pooler", "head", "pooler.dense.weight", (d, d))
        yield _one(POOLER, "pooler", "vector", "pooler.dense.bias", (d,))
    if spec.vision is not None:  # placed by part, not by tensor: a tower is kept in the rest's format
        for p in spec.vision.parts:
            yield PlacedTensor(p.name, "vision", p.name, (p.params_each,), "vision", copies=p.copies)


def model_layout(spec: ModelSpec) -> tuple[PlacedTensor, ...]:
    """Every tensor `spec` places, in the model's order."""
    return (*_embeddings(spec), *_extras(spec, per_layer=False), *_layers(spec), *_top(spec))


def blocks(placed: Iterable[PlacedTensor]) -> list[Block]:
    """The walk by row: the tensors of one block name, part and layers, in the order they first come."""
    found: dict[tuple[str, str, tuple[int, ...] | None], list[PlacedTensor]] = {}
    for t in placed:
        found.setdefault((t.block, t.part, t.layers), []).append(t)
    return [Block(name, tensors[0].part, layers, tuple(tensors)) for (name, _part, layers), tensors in found.items()]
