"""Whole-model parameter accounting: parts, totals, active totals, shares, memory.

Only parameters count: causal-mask and rotary `inv_freq` buffers are not parameters, and a
tied LM head shares the embedding matrix, so it adds nothing. FFN and MoE parts come from
ffn_cli.accounting on the model's FFNSpecs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from ffn_cli.accounting import DTYPE_BYTES, active_params, total_params
from ffn_cli.attention import AnyAttention
from ffn_cli.i18n import N_, Message
from ffn_cli.models import layout
from ffn_cli.models.layer import attention_summary
from ffn_cli.models.layout import Block, PartKind, blocks, model_layout
from ffn_cli.models.mixers import SourceAttention
from ffn_cli.models.pattern import layer_pattern
from ffn_cli.models.spec import ModelSpec, layer_ranges, one_expert
from ffn_cli.models.tensor_notes import modules_said
from ffn_cli.names import unknown_name
from ffn_cli.spec import FFNSpec

__all__ = ["ModelParams", "ModelPart", "PartKind", "TrainingMemory", "count_model", "layer_labels", "training_memory"]

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
    # A part no text token runs: what it runs on instead, "images", "audio", "speech" (an omni
    # model's talker and vocoder) or "source" (an encoder-decoder's encoder); "" for the rest.
    runs_on: str = ""

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
        """What one text token touches: its path through the layers, the embeddings and the
        head. A vision tower runs on images, never on a text token (Llama 4 Scout's "17B active"
        leaves its tower out), so it is in the total alone: its rows are active 0."""
        return self._sum(active=True)

    def _routed_expert_params(self) -> int:
        """One routed expert's parameters in every MoE layer together."""
        ffn = self.spec.moe_ffn
        if ffn is None:
            return 0
        return sum(t.count for t in one_expert(ffn)) * len(self.spec.moe_layers)

    @property
    def least_active_params(self) -> int:
        """The fewest one token touches: with zero-computation experts in the router's pool, as
        many of its picks as they can take land on them (active_params is the most)."""
        ffn = self.spec.moe_ffn
        if ffn is None:
            return self.active_params
        return self.active_params - (ffn.active_experts - self.spec.least_picks(ffn)) * self._routed_expert_params()

    @property
    def mean_active_params(self) -> int:
        """What one token touches on average: with zero-computation experts, its real picks
        (ModelSpec.real_picks, k · E / (E + Z)) in place of k."""
        ffn = self.spec.moe_ffn
        if ffn is None:
            return self.active_params
        skipped = Fraction(ffn.active_experts * self.spec.zero_experts, ffn.experts + self.spec.zero_experts)
        return self.active_params - round(skipped * self._routed_expert_params())

    @property
    def embedding_params(self) -> int:
        return self._sum("embedding")

    @property
    def active_without_embeddings(self) -> int:
        """Active, less the token (and position) embeddings, a lookup and no matmul: the
        convention of OpenAI's gpt-oss and NVIDIA's Nemotron figures (the head stays in)."""
        return self.active_params - self.embedding_params

    @property
    def active_without_embeddings_or_head(self) -> int:
        """Active, less the embeddings and an untied head: Qwen's, GLM's and MiniMax's convention."""
        return self.active_without_embeddings - self._sum("head")

    @property
    def attention_params(self) -> int:
        return self._sum("attention")

    @property
    def attention_active_params(self) -> int:
        """What a token runs of the token mixing: not the attention experts it does not pick
        (JetMoE's), nor a cross-attention's keys and values of its source, projected once a source."""
        return self._sum("attention", active=True)

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
    def tower_params(self) -> dict[str, int]:
        """`vision_params` by what each part runs on: images, audio, speech, or the source an encoder reads."""
        found: dict[str, int] = {}
        for p in self.parts:
            if p.kind == "vision":
                found[p.runs_on] = found.get(p.runs_on, 0) + p.params
        return found

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
        return self.ffn_active_params / self.attention_active_params

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
        for ffn, layers in spec.ffn_groups:
            flops += len(layers) * spec.ffn_matmul_flops(ffn)
        if spec.lm_head:
            flops += 2 * spec.head_width * spec.head_rows
        return flops

    @property
    def mean_matmul_flops_per_token(self) -> float:
        """matmul_flops_per_token on average: with zero-computation experts in the router's pool,
        each MoE layer's real picks (ModelSpec.real_picks) in place of its top-k."""
        spec, ffn = self.spec, self.spec.moe_ffn
        if ffn is None or not spec.zero_experts:
            return self.matmul_flops_per_token
        skipped = spec.ffn_matmul_flops(ffn) - spec.mean_ffn_flops(ffn)
        return self.matmul_flops_per_token - len(spec.moe_layers) * skipped

    @property
    def per_layer(self) -> list[dict[str, object]]:
        """Attention and FFN of each distinct layer kind (dense-first layers apart; attention of
        several shapes, Gemma 4's or DeepSeek-V4's, and KV-shared layers apart too); the layers that
        run an earlier layer's weights apart, "weights_held" false: a sum over rows counts them once."""
        spec = self.spec
        rows = []
        attends = set(spec.attention_layers) if spec.attention_kinds or spec.kv_shared_layers else set()
        reused = set(spec.reused_layers)
        for ffn, layers in spec.ffn_groups:
            by_mixer: dict[tuple[str, int, bool], list[int]] = {}
            for i in layers:  # each layer with its own token mixer: a hybrid's mixer layers with the mixer's
                by_mixer.setdefault((*self._token_mixing(i, attends), i not in reused), []).append(i)
            rows += [self._layer_row(ffn, group, mixer, params, held) for (mixer, params, held), group in by_mixer.items()]
        return rows

    def _token_mixing(self, layer: int, attends: set[int]) -> tuple[str, int]:
        """What mixes tokens in `layer`, and its parameters: attention's, a hybrid's mixer's (both
        where they run side by side), none in a layer without one."""
        spec = self.spec
        label = spec.mixer_label(layer)
        attention = spec.attention_params_of(layer) if layer in attends else spec.attention_layer_params
        attention *= 2 if spec.cross_attention else 1
        # the attention experts a token does not pick (JetMoE's), held in the layer beside its picks
        attention += sum(e.params_each * e.copies for e in spec.extras if e.kind == "attention" and layer in (spec.layers_of(e) or ()))
        if spec.mixer is None or layer not in spec.mixer.layers:
            return label, attention if label else 0
        return label, spec.mixer.params + (attention if layer in spec.beside_attention else 0)

    def _layer_row(self, ffn: FFNSpec, layers: list[int], mixer: str, mixing: int, held: bool = True) -> dict[str, object]:
        spec = self.spec
        return {
            "layers": list(layers),
            "token_mixer": mixer,
            "ffn_variant": ffn.variant,
            "attention_params": mixing,
            "ffn_params": ffn_params(spec, ffn),
            "ffn_active_params": ffn_params(spec, ffn, active=True),
            "ffn_attention_ratio": ffn_params(spec, ffn) / mixing if mixing else None,
            # false: its attention and FFN are an earlier layer's weights, run again
            **({"weights_held": held} if spec.weights_from else {}),
        }


def ffn_params(spec: ModelSpec, ffn: FFNSpec, *, active: bool = False) -> int:
    """One layer's FFN as the model holds it: the FFNSpec's count, and for MoE the tensors
    the spec does not hold (moe_extra), which every token touches."""
    count = active_params(ffn) if active else total_params(ffn)
    return count + sum(t.count for t in spec.extra_of(ffn)) - spec.dropped_router(ffn)


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


def _attention_detail(spec: ModelSpec, attention: AnyAttention | None = None) -> Message:
    fused = Message(N_(", fused qkv")) if spec.fused_qkv else ""
    parallel = Message(N_(", parallel with the FFN")) if spec.parallel_block else ""
    return Message.join(attention_summary(attention or spec.attention), fused, parallel)


def _where(layers: tuple[int, ...]) -> Message:
    """' (layer 3)' or ' (layers 0–4, 6)': the layers a row covers, after its words."""
    return Message(N_(" (layer {layers})") if len(layers) == 1 else N_(" (layers {layers})"), layers=layer_ranges(layers))


def _ffn_detail(spec: ModelSpec, ffn: FFNSpec, layers: tuple[int, ...]) -> Message:
    where = "" if len(layers) == spec.n_layers else _where(layers)
    if spec.no_ffn_layers and len(layers) < spec.n_layers:  # one block a layer: the layers are counted, not listed
        where = Message(N_(" ({count} of {n} layers)"), count=len(layers), n=spec.n_layers)
    act = Message(N_(" ({act} counted as {variant})"), act=spec.hidden_act, variant=ffn.ffn_variant.name) if spec.hidden_act else ""
    name, words = ffn.info.model_words(ffn)
    extra = [t.name for t in spec.extra_of(ffn)]
    # A bias of a module the variant names already (gpt-oss's router.bias): said as that module's bias.
    biases = [n for n in extra if n.count(".") == 1 and n.endswith(".bias")]
    said_bias = [Message(N_("{module}'s bias"), module=n.removesuffix(".bias")) for n in biases]
    named = [*modules_said(n for n in extra if n not in biases), *said_bias]
    beside = (Message.join(Message(N_(", + ")), m) for m in named)
    parts: list[str] = [name, act, *words, *beside]
    if spec.routing_of(ffn):
        parts.append(Message.join(Message(N_(", ")), spec.routing_of(ffn)))
    noted = [i for i in spec.ffn_note_layers if i in layers]
    if noted:
        said = N_(", layer {layers}: {note}") if len(noted) == 1 else N_(", layers {layers}: {note}")
        parts.append(Message(said, layers=layer_ranges(tuple(noted)), note=spec.ffn_note))
    return Message.join(*parts, where)


_NORM_NAMES = {
    "rmsnorm": "RMSNorm",
    "layernorm": "LayerNorm",
    "layernorm_no_affine": N_("LayerNorm without weights"),
    "layernorm_no_bias": N_("LayerNorm without bias"),
}


def _norm_name(spec: ModelSpec) -> Message:
    return Message(_NORM_NAMES[spec.norm])


def _attention_row(spec: ModelSpec, block: Block) -> Message | str:
    if spec.attention_kinds and block.layers:  # one row a shape (Gemma 4's sliding and full layers), each with its layers
        first = block.layers[0]
        extra = (Message.join(Message(N_(", + ")), m) for m in modules_said(t.name for t in spec.attention_extra_of(first)))
        return Message.join(_attention_detail(spec, spec.attention_of(first)), *extra, _where(block.layers))
    beside = (Message.join(Message(N_(", + ")), m) for m in modules_said(t.name for t in spec.attention_extra))
    detail = Message.join(_attention_detail(spec), *beside)
    if spec.mixer is not None or spec.no_mixer_layers:
        # "attention" and ", then" are words of the pattern, a mixer's kind a name: only the words are translated.
        said: dict[str, Message] = {"attention": Message(N_("attention")), ", then ": Message(N_(", then ")), ", × ": Message(N_(", × "))}
        mixer = spec.mixer.kind if spec.mixer is not None else None
        named = [re.escape(str.__str__(mixer))] if isinstance(mixer, Message) else []  # a mixer's kind in words, said whole
        if isinstance(mixer, Message):
            said[str.__str__(mixer)] = mixer
        words_re = "|".join([*named, r"\battention\b", ", then ", ", × "])
        pieces = re.split(f"({words_re})", layer_pattern(layer_labels(spec)))
        words: list[str] = [said.get(piece, piece) for piece in pieces if piece]
        detail = Message.join(detail, Message(N_(" (layers: {pattern})"), pattern=Message.join(*words)))
    return detail


def _shared_kv_row(spec: ModelSpec, block: Block) -> Message:
    layers = block.layers or ()
    if len(layers) == 1:
        said = N_("no k_proj, v_proj or k_norm: an earlier layer's keys and values (layer {layers})")
    else:
        said = N_("no k_proj, v_proj or k_norm: an earlier layer's keys and values (layers {layers})")
    return Message(said, layers=layer_ranges(layers))


def _head_row(spec: ModelSpec, block: Block) -> Message:
    bias = Message(N_(", own bias") if spec.tie_word_embeddings else N_(" + bias")) if spec.lm_head_bias else ""
    if spec.tie_word_embeddings:
        return Message.join(Message(N_("tied to the token embeddings")), bias)
    return Message.join(f"({spec.head_rows}, {spec.head_width})", bias, Message(N_(", untied")))


def _reapplied_row(spec: ModelSpec, block: Block) -> Message:
    """'layer 6's weights, run again in layers 12–51': each holder's, in the layers that run them;
    'the weights of layers 6–17, run again in layers 24–47' where each runs again as often."""
    by_holder: dict[int, list[int]] = {}
    for layer, holder in sorted(spec.weights_from):
        by_holder.setdefault(holder, []).append(layer)
    if spec.reused_whole:  # Inkling 2 Loop's later passes, which the layout's note maps
        holders, later = tuple(by_holder), tuple(sorted(layer for layer, _holder in spec.weights_from))
        return Message(N_("the weights of layers {holders}, run again in layers {layers}"), holders=layer_ranges(holders),
                       layers=layer_ranges(later))  # fmt: skip
    one, many = N_("layer {holder}'s weights, run again in layer {layers}"), N_("layer {holder}'s weights, run again in layers {layers}")
    said = [Message(one if len(layers) == 1 else many, holder=holder, layers=layer_ranges(tuple(layers)))
            for holder, layers in by_holder.items()]  # fmt: skip
    return Message.separated(said)


def _run_again(spec: ModelSpec, layers: tuple[int, ...] | None, runs: tuple[int, ...] | None = None) -> Message | str:
    """', run again in 8 more layers' where later layers run these layers' shared blocks; ', run
    in 24 later layers alone' where only they run it (`runs`: the layers that do; Inkling 2 Loop's message gates)."""
    again = [layer for layer, holder in spec.weights_from if layers is not None and holder in layers]
    if not again:
        return ""
    if runs is not None and layers is not None and not set(layers) & set(runs):
        n = len(runs)
        return Message(N_(", run in {n} later layer alone") if n == 1 else N_(", run in {n} later layers alone"), n=n)
    return Message(N_(", run again in {n} more layer") if len(again) == 1 else N_(", run again in {n} more layers"), n=len(again))


def _shape_row(spec: ModelSpec, block: Block) -> str:
    rows, width = block.tensors[0].shape
    return f"({rows}, {width})"  # a shape's dimensions carry no thousands separators


def _position_row(spec: ModelSpec, block: Block) -> Message | str:
    shape = _shape_row(spec, block)
    return Message(N_("{shape}, fixed: sinusoidal, not learned"), shape=shape) if spec.fixed_positions else shape


# What each of the layout's named blocks says of itself in the parts table.
_DETAILS: dict[str, Callable[[ModelSpec, Block], Message | str]] = {
    layout.TOKEN_EMBEDDINGS: _shape_row,
    layout.POSITION_EMBEDDINGS: _position_row,
    layout.TOKEN_TYPE_EMBEDDINGS: _shape_row,
    layout.EMBEDDING_NORM: lambda spec, _b: _norm_name(spec),
    layout.ATTENTION: _attention_row,
    layout.SHARED_KV_ATTENTION: _shared_kv_row,
    layout.REAPPLIED: _reapplied_row,
    layout.CROSS_ATTENTION: lambda _s, _b: Message(N_("q_attn + c_attn (d → 2d) + c_proj, biases")),
    layout.LAYER_NORMS: lambda spec, _b: Message(N_("{n} × {norm}"), n=spec.norms_per_layer, norm=_norm_name(spec)),
    layout.FINAL_NORM: lambda spec, _b: _norm_name(spec),
    layout.LM_HEAD: _head_row,
    layout.POOLER: lambda spec, _b: Message(N_("dense ({d}, {d}) + bias, tanh"), d=f"{spec.d_model:,}"),
}


def _part(spec: ModelSpec, block: Block) -> ModelPart:
    """One row of the parts table from one block of the layout: its parameters in each place, in
    `unit` identical copies where the block is copied whole (Gemma 3n's AltUp projections, a
    vision tower's layers), the words from the family's part or the block's kind."""
    places = 1 if block.layers is None else len(block.layers)
    each = sum(t.numel * t.copies for t in block.tensors if not t.tied)
    name: str = block.name
    unit, active, runs_on = 1, None, ""
    extras = {e.name: e for e in spec.extras if spec.held_layers_of(e) == block.layers}
    mixer = spec.mixer
    if block.name in extras:
        e = extras[block.name]
        unit, detail = e.copies, e.detail
        # held, never run; run by other tokens than this one; or by no text token (a modality's experts)
        active = 0 if e.idle or e.routed[0] or e.kind == "vision" else None
        runs_on = "images" if e.kind == "vision" else ""  # ERNIE 4.5 VL's vision experts, run by image tokens
        if e.layers:  # a part only some layers hold (Inkling 2's full layers' input norms for the keys and values)
            detail = Message.join(detail, _where(spec.held_layers_of(e) or ()))
    elif block.part == "vision" and spec.vision is not None:
        vision = next(p for p in spec.vision.parts if p.name == block.name)
        label = {"audio": N_("audio: {part}"), "speech": N_("speech: {part}"), "source": N_("encoder: {part}")}.get(
            vision.runs_on, N_("vision: {part}")
        )
        part = vision.name if vision.tensors else Message(vision.name)  # an encoder's module path as it is, never a word to translate
        name, unit, detail = Message(label, part=part), vision.copies, vision.detail
        active, runs_on = 0, vision.runs_on  # run on images, audio or a source, never by a token
    elif block.part == "ffn":
        layers = block.layers or ()
        ffn = spec.ffn_of(layers[0])
        assert ffn is not None  # a block of FFN tensors sits in layers that have one
        active = ffn_params(spec, ffn, active=True)  # what a token touches: the variant's to say
        detail = _ffn_detail(spec, ffn, layers)
    elif mixer is not None and block.name == mixer.kind and block.part == "norm":
        name = Message(N_("{kind} norms"), kind=mixer.kind)
        detail = Message(N_("{norm} over {n}"), norm=Message(mixer.norm_kind), n=f"{mixer.norm_params:,}")
    elif mixer is not None and block.name == mixer.kind:
        detail = mixer.detail
        if isinstance(mixer.scan, SourceAttention):  # its keys and values: projected once an input, not by a token
            active = sum(t.numel * t.copies for t in block.tensors if not t.tied and t.name not in mixer.scan.on_source)
    else:
        detail = _DETAILS[block.name](spec, block)
    if block.name == layout.ATTENTION or block.part == "ffn" or (block.part == "norm" and spec.reused_whole):
        detail = Message.join(detail, _run_again(spec, block.layers))  # a shared block's, held by these layers
    elif block.name in extras and extras[block.name].shared:
        detail = Message.join(detail, _run_again(spec, block.layers, spec.layers_of(extras[block.name])))
    elif spec.reused_whole and mixer is not None and block.name == mixer.kind:
        detail = Message.join(detail, _run_again(spec, block.layers))
    return ModelPart(name, block.part, detail, each // unit, places * unit, active if active not in (None, each) else None, runs_on)


def count_model(spec: ModelSpec) -> ModelParams:
    """Every parameter of `spec`, part by part, in the order the model runs them: a fold over its
    layout. A block in no layer (the attention of a model no layer of which attends: Mamba's,
    xLSTM's) is no part."""
    return ModelParams(spec, tuple(_part(spec, b) for b in blocks(model_layout(spec)) if b.layers != ()))
