"""Whole-model parameter accounting: parts, totals, active totals, shares, memory.

Only parameters count: causal-mask and rotary `inv_freq` buffers are not parameters, and a
tied LM head shares the embedding matrix, so it adds nothing. FFN and MoE parts come from
ffn_cli.accounting on the model's FFNSpecs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ffn_cli.accounting import DTYPE_BYTES, active_params, matmul_flops_per_token, total_params
from ffn_cli.i18n import N_, Message
from ffn_cli.models.layer import attention_summary
from ffn_cli.models.pattern import layer_pattern
from ffn_cli.models.spec import ExtraPart, ModelSpec, layer_ranges
from ffn_cli.names import unknown_name
from ffn_cli.spec import FFNSpec

__all__ = ["ModelParams", "ModelPart", "PartKind", "TrainingMemory", "count_model", "layer_labels", "training_memory"]

# "other": a family's tensors that are none of these (Gemma 3n's AltUp, Laurel, per-layer inputs).
PartKind = Literal["embedding", "attention", "ffn", "norm", "head", "pooler", "vision", "other"]

# Adam keeps two float32 moments (m, v) per parameter, whatever the training dtype.
ADAM_STATE_BYTES = 8
# Below float32, mixed precision keeps a float32 master copy of the weights for the update.
MASTER_BYTES = 4


@dataclass(frozen=True)
class ModelPart:
    """One row of the breakdown: `copies` identical instances (layers) of `params_each`."""

    name: str
    kind: PartKind
    detail: str
    params_each: int
    copies: int = 1
    active_each: int | None = None  # MoE: what one token touches; None when all of it

    @property
    def params(self) -> int:
        return self.params_each * self.copies

    @property
    def active_params(self) -> int:
        return (self.params_each if self.active_each is None else self.active_each) * self.copies


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes to train with Adam: weights and gradients in `dtype`, a float32 master copy
    below float32, two float32 Adam moments. Activations are not included (they scale with
    batch × sequence; `ffn params --variant` shows them per token)."""

    params: int
    dtype: str

    @property
    def weights_bytes(self) -> int:
        return self.params * DTYPE_BYTES[self.dtype]

    @property
    def grads_bytes(self) -> int:
        return self.params * DTYPE_BYTES[self.dtype]

    @property
    def master_bytes(self) -> int:
        return self.params * MASTER_BYTES if DTYPE_BYTES[self.dtype] < MASTER_BYTES else 0

    @property
    def optimizer_bytes(self) -> int:
        return self.params * ADAM_STATE_BYTES

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.grads_bytes + self.master_bytes + self.optimizer_bytes


def training_memory(params: int, dtype: str = "bfloat16") -> TrainingMemory:
    if dtype not in DTYPE_BYTES:
        raise unknown_name("dtype", dtype, list(DTYPE_BYTES), what=N_("dtype"))
    return TrainingMemory(params, dtype)


@dataclass(frozen=True)
class ModelParams:
    """The accounting of one ModelSpec; every total is a sum over `parts`."""

    spec: ModelSpec
    parts: tuple[ModelPart, ...]

    def _sum(self, kind: PartKind | None = None, *, active: bool = False) -> int:
        return sum(p.active_params if active else p.params for p in self.parts if kind is None or p.kind == kind)

    @property
    def total_params(self) -> int:
        return self._sum()

    @property
    def active_params(self) -> int:
        return self._sum(active=True)

    @property
    def embedding_params(self) -> int:
        return self._sum("embedding")

    @property
    def attention_params(self) -> int:
        return self._sum("attention")

    @property
    def ffn_params(self) -> int:
        return self._sum("ffn")

    @property
    def ffn_active_params(self) -> int:
        return self._sum("ffn", active=True)

    @property
    def norm_params(self) -> int:
        return self._sum("norm")

    @property
    def vision_params(self) -> int:
        """The vision tower and its projector (0 for a text-only config)."""
        return self._sum("vision")

    @property
    def text_params(self) -> int:
        return self.total_params - self.vision_params

    @property
    def non_embedding_params(self) -> int:
        """Everything but the token/position/type embeddings and an untied head (Kaplan et al.)."""
        return self.total_params - self.embedding_params - self._sum("head")

    @property
    def ffn_share(self) -> float:
        return self.ffn_params / self.total_params

    @property
    def ffn_active_share(self) -> float:
        return self.ffn_active_params / self.active_params

    @property
    def ffn_attention_ratio(self) -> float:
        return self.ffn_params / self.attention_params

    @property
    def ffn_active_attention_ratio(self) -> float:
        return self.ffn_active_params / self.attention_params

    def weight_bytes(self, dtype: str) -> int:
        return self.total_params * DTYPE_BYTES[dtype]

    def training_memory(self, dtype: str = "bfloat16") -> TrainingMemory:
        return training_memory(self.total_params, dtype)

    @property
    def matmul_flops_per_token(self) -> int:
        """Forward matmul FLOPs of one token on the active path: the projections of every layer
        and the LM head. Attention scores (4·seq·heads·head_dim per layer) depend on the
        sequence length and are left out."""
        spec = self.spec
        flops = spec.attention_flops + spec.extra_flops
        if spec.mixer is not None:
            flops += len(spec.mixer.layers) * spec.mixer.projection_flops
        for ffn, layers in _ffn_groups(spec):
            flops += len(layers) * matmul_flops_per_token(ffn)
        if spec.lm_head:
            flops += 2 * spec.d_model * spec.vocab_size
        return flops

    @property
    def per_layer(self) -> list[dict[str, object]]:
        """Attention and FFN of each distinct layer kind (dense-first layers apart)."""
        spec = self.spec
        attention = spec.attention_layer_params * (2 if spec.cross_attention else 1)
        return [
            {
                "layers": list(layers),
                "ffn_variant": ffn.variant,
                "attention_params": attention,
                "ffn_params": ffn_params(spec, ffn),
                "ffn_active_params": ffn_params(spec, ffn, active=True),
                "ffn_attention_ratio": ffn_params(spec, ffn) / attention,
            }
            for ffn, layers in _ffn_groups(spec)
        ]


def ffn_params(spec: ModelSpec, ffn: FFNSpec, *, active: bool = False) -> int:
    """One layer's FFN as the model holds it: the FFNSpec's count, and for MoE the tensors
    the spec does not hold (moe_extra), which every token touches."""
    count = active_params(ffn) if active else total_params(ffn)
    return count + sum(t.count for t in spec.extra_of(ffn))


def ffn_part_name(ffn: FFNSpec) -> str:
    """'MoE FFN' or 'FFN': what a model's parts table calls a layer's FFN (an English id)."""
    return ffn.info.part_name


def layer_labels(spec: ModelSpec) -> list[str]:
    """Each layer's kind for the layer pattern: what mixes its tokens ('attention', 'Mamba-2'),
    or for a layer that is an FFN alone, 'FFN' or 'MoE FFN'."""
    labels = []
    for i in range(spec.n_layers):
        ffn = spec.ffn_of(i)
        labels.append(spec.mixer_label(i) or (ffn_part_name(ffn) if ffn is not None else "FFN"))
    return labels


def _ffn_groups(spec: ModelSpec) -> list[tuple[FFNSpec, tuple[int, ...]]]:
    groups: list[tuple[FFNSpec, tuple[int, ...]]] = []
    groups += spec.dense_groups
    if spec.moe_ffn is not None and spec.moe_layers:
        groups.append((spec.moe_ffn, spec.moe_layers))
    return groups


def _attention_detail(spec: ModelSpec) -> Message:
    fused = Message(N_(", fused qkv")) if spec.fused_qkv else ""
    return Message.join(attention_summary(spec.attention), fused, Message(N_(", parallel with the FFN")) if spec.parallel_block else "")


def _ffn_detail(spec: ModelSpec, ffn: FFNSpec, layers: tuple[int, ...]) -> Message:
    where = "" if len(layers) == spec.n_layers else Message(N_(" (layers {layers})"), layers=layer_ranges(layers))
    if spec.no_ffn_layers and len(layers) < spec.n_layers:  # one block a layer: the layers are counted, not listed
        where = Message(N_(" ({count} of {n} layers)"), count=len(layers), n=spec.n_layers)
    act = Message(N_(" ({act} counted as {variant})"), act=spec.hidden_act, variant=ffn.ffn_variant.name) if spec.hidden_act else ""
    name, words = ffn.info.model_words(ffn)
    parts: list[str] = [name, act, *words, *(f", + {t.name}" for t in spec.extra_of(ffn))]
    if spec.routing_of(ffn):
        parts.append(Message.join(", ", spec.routing_of(ffn)))
    noted = [i for i in spec.ffn_note_layers if i in layers]
    if noted:
        parts.append(Message(N_(", layers {layers}: {note}"), layers=layer_ranges(tuple(noted)), note=spec.ffn_note))
    return Message.join(*parts, where)


_NORM_NAMES = {
    "rmsnorm": "RMSNorm",
    "layernorm": "LayerNorm",
    "layernorm_no_affine": N_("LayerNorm without weights"),
    "layernorm_no_bias": N_("LayerNorm without bias"),
}


def _norm_name(spec: ModelSpec) -> Message:
    return Message(_NORM_NAMES[spec.norm])


def _embedding_parts(spec: ModelSpec) -> list[ModelPart]:
    d = spec.d_model
    parts = [ModelPart(N_("token embeddings"), "embedding", f"({spec.vocab_size:,}, {d:,})", spec.vocab_size * d)]
    if spec.max_positions:
        parts.append(ModelPart(N_("position embeddings"), "embedding", f"({spec.max_positions:,}, {d:,})", spec.max_positions * d))
    if spec.type_vocab_size:
        parts.append(ModelPart(N_("token-type embeddings"), "embedding", f"({spec.type_vocab_size:,}, {d:,})", spec.type_vocab_size * d))
    if spec.embedding_norm:
        parts.append(ModelPart(N_("embedding norm"), "norm", _norm_name(spec), spec.norm_params))
    return parts + [_extra_part(spec, e) for e in spec.extras if not e.per_layer]


def _extra_part(spec: ModelSpec, e: ExtraPart) -> ModelPart:
    return ModelPart(e.name, e.kind, e.detail, e.params_each, spec.copies_of(e))


def _layer_parts(spec: ModelSpec) -> list[ModelPart]:
    attention_layers = spec.attention_layers
    detail = Message.join(_attention_detail(spec), *(f", + {t.name}" for t in spec.attention_extra))
    if spec.mixer is not None or spec.no_mixer_layers:
        # "attention" and ", then" are words of the pattern, a mixer's kind a name: only the words are translated.
        said = {"attention": Message(N_("attention")), ", then ": Message(N_(", then "))}
        pieces = re.split(r"(\battention\b|, then )", layer_pattern(layer_labels(spec)))
        words: list[str] = [said.get(piece, piece) for piece in pieces if piece]
        detail = Message.join(detail, Message(N_(" (layers: {pattern})"), pattern=Message.join(*words)))
    shared = [i for i in attention_layers if i in spec.kv_shared_layers]
    parts = [ModelPart(N_("attention"), "attention", detail, spec.attention_layer_params, len(attention_layers) - len(shared))]
    if shared:
        reuse = Message(
            N_("no k_proj, v_proj or k_norm: an earlier layer's keys and values (layers {layers})"), layers=layer_ranges(tuple(shared))
        )
        parts.append(ModelPart(N_("attention, shared KV"), "attention", reuse, spec.kv_shared_layer_params, len(shared)))
    if spec.mixer is not None:
        m = spec.mixer
        parts.append(ModelPart(m.kind, "attention", m.detail, m.params, len(m.layers)))
    if spec.cross_attention:
        parts.append(
            ModelPart(
                N_("cross-attention"),
                "attention",
                Message(N_("q_attn + c_attn (d → 2d) + c_proj, biases")),
                spec.attention.params,
                spec.n_layers,
            )
        )
    for ffn, layers in _ffn_groups(spec):
        name = ffn_part_name(ffn)
        total, active = ffn_params(spec, ffn), ffn_params(spec, ffn, active=True)
        parts.append(ModelPart(name, "ffn", _ffn_detail(spec, ffn, layers), total, len(layers), active if active != total else None))
    parts += [_extra_part(spec, e) for e in spec.extras if e.per_layer]
    norms = Message(N_("{n} × {norm}"), n=spec.norms_per_layer, norm=_norm_name(spec))
    parts.append(ModelPart(N_("layer norms"), "norm", norms, spec.norms_per_layer * spec.norm_params, spec.n_layers))
    if spec.mixer is not None and spec.mixer.norm_params:
        m = spec.mixer
        name = Message(N_("{kind} norms"), kind=m.kind)
        over = Message(N_("gated RMSNorm over {n}"), n=f"{m.norm_params:,}")
        parts.append(ModelPart(name, "norm", over, m.norm_params, len(m.layers)))
    return parts


def _top_parts(spec: ModelSpec) -> list[ModelPart]:
    d, parts = spec.d_model, []
    if spec.final_norm:
        parts.append(ModelPart(N_("final norm"), "norm", _norm_name(spec), spec.norm_params))
    if spec.lm_head:
        bias = spec.vocab_size if spec.lm_head_bias else 0
        if spec.tie_word_embeddings:
            tied = Message.join(Message(N_("tied to the token embeddings")), Message(N_(", own bias")) if bias else "")
            parts.append(ModelPart(N_("LM head"), "head", tied, bias))
        else:
            detail = Message.join(f"({spec.vocab_size:,}, {d:,})", Message(N_(" + bias")) if bias else "", Message(N_(", untied")))
            parts.append(ModelPart(N_("LM head"), "head", detail, spec.vocab_size * d + bias))
    if spec.pooler:
        parts.append(ModelPart(N_("pooler"), "pooler", Message(N_("dense ({d}, {d}) + bias, tanh"), d=f"{d:,}"), d * d + d))
    return parts


def count_model(spec: ModelSpec) -> ModelParams:
    """Every parameter of `spec`, part by part, in the order the model runs them."""
    return ModelParams(spec, tuple(_embedding_parts(spec) + _layer_parts(spec) + _top_parts(spec) + _vision_parts(spec)))


def _vision_parts(spec: ModelSpec) -> list[ModelPart]:
    if spec.vision is None:
        return []
    return [
        ModelPart(Message(N_("vision: {part}"), part=Message(p.name)), "vision", p.detail, p.params_each, p.copies)
        for p in spec.vision.parts
    ]
