"""ModelSpec: a whole Transformer as the accounting sees it, frozen and validated.

The FFN of every layer is an FFNSpec (dense, gated or MoE), so its parameters and FLOPs come
from ffn_cli.accounting, the same code the built torch module is checked against; attention is
an AttentionSpec. Everything else (embeddings, norms, head, pooler) is a handful of integers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from ffn_cli.accounting import ParamTensor, matmul_flops_per_token, param_tensors
from ffn_cli.attention import AnyAttention
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.mixers import LinearMixer, SourceAttention
from ffn_cli.models.vision import VisionTower
from ffn_cli.spec import FFNSpec, check_int

__all__ = [
    "KV_TENSORS",
    "NORM_KINDS",
    "AttentionKind",
    "ExtraKind",
    "ExtraPart",
    "ModelSpec",
    "NormKind",
    "kv_tensors",
    "layer_ranges",
    "one_expert",
]

NormKind = Literal["rmsnorm", "layernorm", "layernorm_no_affine", "layernorm_no_bias"]
# Parameters of one norm over d_model, in units of d: RMSNorm a weight, LayerNorm weight and
# bias, OLMo-1's LayerNorm neither, Cohere's LayerNorm a weight only.
NORM_KINDS: dict[str, int] = {"rmsnorm": 1, "layernorm": 2, "layernorm_no_affine": 0, "layernorm_no_bias": 1}
# Deeper than any published model by far; beyond it a config is a typo.
MAX_LAYERS = 4096
MAX_VOCAB = 1 << 24
# What a layer that reuses an earlier layer's keys and values does without: the tensors of
# AttentionSpec.tensors() with these prefixes.
KV_TENSORS = ("k_proj.", "v_proj.", "k_norm.")

# "vision": experts of the image tokens beside a layer's text ones (ERNIE 4.5 VL's), run by no text token;
# "attention": attention experts a token does not pick (JetMoE's), counted with the attention.
ExtraKind = Literal["attention", "embedding", "norm", "other", "vision"]
# Layers in a row, evenly spaced, from which layer_ranges writes them as a series.
_STRIDED = 5


@dataclass(frozen=True)
class ExtraPart:
    """Tensors a family holds beside its layers' token mixer, FFN and norms, counted as one part:
    `copies` of `tensors` in every layer (`per_layer`) or in the model; `flops` the matmul FLOPs
    one copy spends per token (a table that is looked up spends none). Gemma 3n's AltUp, Laurel,
    per-layer input gates and their second embedding table are such parts."""

    name: str  # an English id, marked with N_()
    kind: ExtraKind
    detail: str
    tensors: tuple[ParamTensor, ...]
    per_layer: bool = False
    flops: int = 0
    copies: int = 1  # identical copies (Gemma 3n's altup_num_inputs − 1 projections each way)
    # The layers that hold it where only some do (Inkling 2's full layers, their k and v input
    # norms); empty: every layer, when per_layer.
    layers: tuple[int, ...] = ()
    # A convolution's latest inputs it keeps per sequence between tokens, in each layer that holds it
    # (Qwen4-Exp's PLE: (taps − 1) · dilation inputs of its channels), over the residual stream's copies.
    state: int = 0
    # Rows a token reads from each table of an "embedding" part (Qwen4-Exp's n-gram table: one a hashed head).
    lookups: int = 1
    # Its tensors are a shared block's (Zamba's norms inside its shared transformer): held by the
    # layers that first apply it, run but not held again by ModelSpec.weights_from's layers.
    shared: bool = False
    # Held and never run (Inkling 2 Loop's message gates where it runs one pass): in the total, not the active count.
    idle: bool = False
    # (experts, picks): its tensors are the experts − picks a token does not pick (JetMoE's attention
    # experts, the picks' held by the layer's AttentionSpec): in the total, not the active count; a
    # pass reads those its tokens touch beyond their picks. (0, 0): not routed.
    routed: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        experts, picks = self.routed
        if (experts or picks) and not 0 < picks < experts:
            raise FFNError("routed", self.routed, _("must pick fewer experts than it holds, and at least one"))

    @property
    def params_each(self) -> int:
        return sum(t.count for t in self.tensors)


@dataclass(frozen=True)
class AttentionKind:
    """Attention layers whose shapes are not the model's `attention`: their own AttentionSpec and
    the tensors beside it (Gemma 4's full layers, heads twice as wide as its sliding layers')."""

    attention: AnyAttention
    extra: tuple[ParamTensor, ...]
    layers: tuple[int, ...]

    @property
    def params(self) -> int:
        return self.attention.params + sum(t.count for t in self.extra)

    @property
    def flops(self) -> int:
        """Projection FLOPs per token, the extra tensors' Linear weights (and biases) included."""
        weights = sum(t.count for t in self.extra if ".weight" in t.name)
        biases = sum(t.count for t in self.extra if ".bias" in t.name)
        return self.attention.projection_flops_per_token() + 2 * weights + biases


def _own_kind(spec: ModelSpec) -> AttentionKind:
    """The model's `attention` and attention_extra, as a kind (its layers are not needed here)."""
    return AttentionKind(spec.attention, spec.attention_extra, ())


@dataclass(frozen=True)
class ModelSpec:
    """One model: shapes, which layers are MoE, and the conventions that change the count.

    `moe_layers` lists the layer indices whose FFN is `moe_ffn`; every other layer uses
    `dense_ffn` (DeepSeek-MoE's dense first layer, Qwen2-MoE's mlp_only_layers, Llama 4's
    interleaved layers). `vision` is a multimodal config's vision tower, counted as its own part.
    """

    name: str
    model_type: str
    d_model: int
    n_layers: int
    vocab_size: int
    attention: AnyAttention
    dense_ffn: FFNSpec | None = None
    moe_ffn: FFNSpec | None = None
    moe_layers: tuple[int, ...] = ()
    max_positions: int = 0  # learned absolute position embeddings; 0 for rotary (a buffer, not parameters)
    # The row the first token's position reads: RoBERTa's positions start past its padding row
    # (padding_idx + 1), so its table of max_positions rows holds max_positions - first_position tokens.
    first_position: int = 0
    # The position table is computed, not learned (Marian's and Pegasus's sinusoidal tables): a
    # parameter transformers counts and a checkpoint holds, never trained.
    fixed_positions: bool = False
    type_vocab_size: int = 0  # BERT's token-type (segment) embeddings
    norm: NormKind = "rmsnorm"
    norms_per_layer: int = 2
    final_norm: bool = True
    embedding_norm: bool = False  # BERT normalises the summed embeddings
    lm_head: bool = True
    tie_word_embeddings: bool = False
    pooler: bool = False
    fused_qkv: bool = False  # one qkv_proj (Phi-3) or c_attn (GPT-2): same count, one matmul
    parallel_block: bool = False  # attention and FFN read the same input (GPT-J, Falcon, Phi-2): no count change
    lm_head_bias: bool = False  # Phi's head carries a vocab-sized bias, tied weight or not
    # The LM head's rows where other than vocab_size (Inkling 2's unpadded_vocab_size: the
    # checkpoint's padded rows are dropped on load); 0: vocab_size.
    lm_head_rows: int = 0
    # Factorized embeddings (ELECTRA's embedding_size, RemBERT's input_embedding_size): the token table's
    # columns where narrower than d_model, its position and token-type tables and their norm as wide, a
    # Linear beside the layers projecting them to d_model. 0: d_model.
    embedding_dim: int = 0
    # The width the LM head reads where other than d_model (RemBERT's output_embedding_size, ELECTRA's
    # generator's embedding_size), from a Linear beside the layers. 0: d_model.
    lm_head_dim: int = 0
    # Tensors of each MoE layer beside its FFNSpec's, always active: gpt-oss's router bias,
    # Qwen2-MoE's shared_expert_gate when the shared expert has width 0, DeepSeek-V2's shared-expert
    # biases under mlp_bias (its routed experts have none).
    moe_extra: tuple[ParamTensor, ...] = ()
    cross_attention: bool = False  # GPT-2 add_cross_attention: a second attention of the same shape per layer
    hidden_act: str = ""  # the config's activation name, when it differs from the variant's own
    routing: str = ""  # routing that moves no parameter (grouped top-k, scaling), in words
    vision: VisionTower | None = None
    source: str = ""
    # A hybrid's layers that mix tokens without softmax attention (Qwen3-Next's Gated DeltaNet);
    # the other layers use `attention`.
    mixer: LinearMixer | None = None
    # The mixer's layers that attend too, the two side by side in one layer (Falcon-H1's Mamba-2
    # beside its attention in every layer, Zamba's shared attention in its hybrid layers): both run,
    # both keep their state.
    beside_attention: tuple[int, ...] = ()
    # Tensors of each attention layer beside its AttentionSpec's, each a Linear weight run once per
    # token: Qwen3-Next's output gate, the second half of a q_proj twice as wide.
    attention_extra: tuple[ParamTensor, ...] = ()
    # Layers that are one block each (Nemotron-H): a token mixer and no FFN, or an FFN and no
    # token mixer. Every other layer has both.
    no_ffn_layers: tuple[int, ...] = ()
    no_mixer_layers: tuple[int, ...] = ()
    # Attention layers that reuse the keys and values an earlier layer computed (Gemma 3n's last
    # num_kv_shared_layers): no k/v projections or k norm of their own, and no cache.
    kv_shared_layers: tuple[int, ...] = ()
    # Tensors beside every layer's attention, FFN and norms, and beside the layers (ExtraPart).
    extras: tuple[ExtraPart, ...] = ()
    # How the FFN of `ffn_note_layers` runs beyond its variant, at the same parameters and
    # matmul FLOPs, in words (Gemma 3n's first layers keep only the gate's values above a
    # Gaussian quantile); the variants do not run it.
    ffn_note: str = ""
    ffn_note_layers: tuple[int, ...] = ()
    # The dense FFN's width in each layer where the widths differ (Gemma 3n's MatFormer slices):
    # one per layer, each layer's FFN dense_ffn at its own d_ff. Empty: dense_ffn's in every layer.
    dense_widths: tuple[int, ...] = ()
    # Attention layers of other shapes than `attention` (Gemma 4's full layers, wider heads and
    # fewer KV heads than its sliding ones): each kind its own spec, tensors and layers.
    attention_kinds: tuple[AttentionKind, ...] = ()
    # DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5): in `index_layers` one key of
    # `index_key_width` elements a token, cached beside the attention's own (its tensors are in
    # attention_extra); a layer that reuses another's top-k caches none.
    index_key_width: int = 0
    index_layers: tuple[int, ...] = ()
    # The indexer's heads (its scores cost 2·index_heads·index_key_width FLOPs a key read), and the
    # keys each query's attention then reads, its top-k (index_topk), in every attention layer:
    # a layer that reuses another's top-k reads as few. 0: no indexer, every key read.
    index_heads: int = 0
    sparse_topk: int = 0
    # Keys averaged into each block the indexer scores (Qwen4-Exp's QSA compress_ratio): its scores
    # cost a block's share of 2·index_heads·index_key_width a key; 1 for DSA's, which scores each key.
    index_block: int = 1
    # Keys of each block the attention reads whole where the indexer picks blocks, not keys
    # (MiniMax-M3's MSA: its top index_topk // index_select_block blocks of 128); 1: keys.
    index_select_block: int = 1
    # Attention layers that read every key beside layers that read an indexer's top-k: MiniMax-M3's
    # first three build no indexer and attend whole (a layer that reuses another's top-k, GLM-5's
    # "shared" ones, is not one of them).
    full_read_layers: tuple[int, ...] = ()
    # Zero-computation (identity) experts in the MoE layers' router pool beside moe_ffn's experts
    # (LongCat-Flash's zero_expert_num): a pick that lands on one passes the token through, so a
    # token runs from max(0, k − Z) to k real experts, k · E / (E + Z) on average (real_picks).
    zero_experts: int = 0
    # The MoE layers' routers choose their experts on scores plus a bias, one float32 per expert of
    # the pool (zero experts too), kept out of the gradient (DeepSeek-V3's e_score_correction_bias,
    # LFM2-MoE's expert_bias): a buffer to transformers, no parameter, but a tensor the checkpoint
    # stores. A router's bias that is a parameter (Ernie 4.5's) is counted in moe_extra instead.
    router_score_bias: bool = False
    # The MoE layers route through a module of their own, every tensor of it in moe_extra (Zaya's
    # MLP router over its router_hidden_size state): moe_ffn's own E × d router is not held.
    router_in_extra: bool = False
    # Sublayers in each of the config's decoder layers, each one of these layers (LongCat-Flash:
    # two attention-and-MLP sublayers a layer, its shortcut MoE beside the first one's MLP).
    sublayers: int = 1
    # Copies of the hidden state the residual stream carries between layers (DeepSeek-V4's
    # hyper-connections, hc_mult): each layer reads and writes that many.
    residual_copies: int = 1
    # (layer, holder) pairs: `layer` runs the attention, FFN and shared ExtraParts whose weights
    # `holder`, an earlier layer, holds (Zamba's shared transformer blocks, applied every few
    # layers). It holds none of its own, but computes them, reads them and keeps its own KV cache.
    weights_from: tuple[tuple[int, int], ...] = ()
    # weights_from's layers run their holder's whole layer, its token mixer and norms too (Inkling 2
    # Loop's later passes over its looped layers), not only its attention, FFN and shared parts.
    reused_whole: bool = False
    _by_width: dict[int, FFNSpec] = field(default_factory=dict, init=False, repr=False, compare=False)  # one FFNSpec a width

    def __post_init__(self) -> None:
        check_int("hidden_size", self.d_model)
        check_int("num_hidden_layers", self.n_layers, maximum=MAX_LAYERS)
        check_int("vocab_size", self.vocab_size, maximum=MAX_VOCAB)
        check_int("max_position_embeddings", self.max_positions, minimum=0)
        check_int("first_position", self.first_position, minimum=0, maximum=max(self.max_positions - 1, 0))
        check_int("lm_head_rows", self.lm_head_rows, minimum=0, maximum=MAX_VOCAB)
        if self.lm_head_rows and self.tie_word_embeddings:
            raise FFNError("lm_head_rows", self.lm_head_rows, _("a head tied to the token embeddings has their rows"))
        check_int("type_vocab_size", self.type_vocab_size, minimum=0, maximum=MAX_VOCAB)
        check_int("embedding_dim", self.embedding_dim, minimum=0)
        check_int("lm_head_dim", self.lm_head_dim, minimum=0)
        if self.tie_word_embeddings and self.head_width != self.embedding_width:
            why = _("a head tied to the token embeddings reads their width ({width})").format(width=f"{self.embedding_width:,}")
            raise FFNError("lm_head_dim", self.head_width, why)
        if self.norm not in NORM_KINDS:
            raise FFNError("norm", self.norm, _("choose one of {norm_kinds}").format(norm_kinds=", ".join(NORM_KINDS)))
        if self.attention.d_model != self.d_model:
            raise FFNError(
                "attention.d_model", self.attention.d_model, _("must equal hidden_size ({d_model})").format(d_model=self.d_model)
            )
        layers = tuple(sorted(set(self.moe_layers)))
        if any(not 0 <= i < self.n_layers for i in layers):
            raise FFNError("moe_layers", self.moe_layers, _("must be layer indices in [0, {n_layers})").format(n_layers=self.n_layers))
        object.__setattr__(self, "moe_layers", layers)
        if self.mixer is not None and any(not 0 <= i < self.n_layers for i in self.mixer.layers):
            raise FFNError("layer_types", self.mixer.layers, _("must be layer indices in [0, {n_layers})").format(n_layers=self.n_layers))
        for name in ("no_ffn_layers", "no_mixer_layers", "kv_shared_layers", "ffn_note_layers"):
            value = tuple(sorted(set(getattr(self, name))))
            if any(not 0 <= i < self.n_layers for i in value):
                raise FFNError(name, getattr(self, name), _("must be layer indices in [0, {n_layers})").format(n_layers=self.n_layers))
            object.__setattr__(self, name, value)
        if set(self.no_ffn_layers) & set(self.no_mixer_layers):
            raise FFNError("no_mixer_layers", self.no_mixer_layers, _("a layer without an FFN needs a token mixer"))
        if set(self.no_ffn_layers) & set(layers):
            raise FFNError("no_ffn_layers", self.no_ffn_layers, _("a MoE layer has an FFN"))
        if set(self.kv_shared_layers) - set(self.attention_layers):
            raise FFNError("kv_shared_layers", self.kv_shared_layers, _("must be attention layers"))
        if self.mixer is not None and set(self.no_mixer_layers) & set(self.mixer.layers):
            raise FFNError("no_mixer_layers", self.no_mixer_layers, _("a {kind} layer has a token mixer").format(kind=self.mixer.kind))
        object.__setattr__(self, "beside_attention", tuple(sorted(set(self.beside_attention))))
        if self.beside_attention and (self.mixer is None or set(self.beside_attention) - set(self.mixer.layers)):
            raise FFNError("beside_attention", self.beside_attention, _("must be the mixer's layers"))
        self._check_attention_kinds()
        check_int("index_head_dim", self.index_key_width, minimum=0)
        check_int("index_n_heads", self.index_heads, minimum=0)
        check_int("index_topk", self.sparse_topk, minimum=0)
        check_int("indexer_compress_ratio", self.index_block)
        check_int("index_block_size", self.index_select_block)
        if self.sparse_topk % self.index_select_block:
            raise FFNError("index_topk", self.sparse_topk, _("must be whole blocks of {block}").format(block=self.index_select_block))
        if set(self.full_read_layers) & set(self.index_layers) or set(self.full_read_layers) - set(self.attention_layers):
            why = _("must be attention layers without an indexer")
            raise FFNError("full_read_layers", self.full_read_layers, why)
        check_int("zero_expert_num", self.zero_experts, minimum=0)
        if self.zero_experts and self.moe_ffn is None:
            raise FFNError("zero_expert_num", self.zero_experts, _("needs routed experts"))
        if self.router_score_bias and self.moe_ffn is None:
            raise FFNError("router_score_bias", self.router_score_bias, _("needs routed experts"))
        check_int("sublayers", self.sublayers)
        check_int("hc_mult", self.residual_copies)
        if self.n_layers % self.sublayers:
            why = _("must divide num_hidden_layers ({n_layers})").format(n_layers=self.n_layers)
            raise FFNError("sublayers", self.sublayers, why)
        if bool(self.index_layers) != bool(self.index_heads) or (self.sparse_topk and not self.index_layers):
            raise FFNError("index_n_heads", self.index_heads, _("an indexer's heads and top-k go with its layers"))
        if set(self.index_layers) - set(self.attention_layers) or (self.index_layers and not self.index_key_width):
            raise FFNError("index_layers", self.index_layers, _("must be attention layers, with an index_head_dim"))
        self._check_ffn("moe_ffn", self.moe_ffn, needed=bool(layers), moe=True)
        self._check_ffn("dense_ffn", self.dense_ffn, needed=bool(self.dense_layers), moe=False)
        if self.dense_widths:
            if len(self.dense_widths) != self.n_layers or self.dense_ffn is None:
                why = _("must list one width for each of {layers} layers, or be one width").format(layers=self.n_layers)
                raise FFNError("intermediate_size", list(self.dense_widths), why)
            for w in self.dense_widths:  # the same object for a width each time ffn_of is asked
                self._by_width.setdefault(check_int("intermediate_size", w), self.dense_ffn.with_(d_ff=w))
        self._check_weights_from()

    def _check_weights_from(self) -> None:
        layers = [layer for layer, _holder in self.weights_from]
        attends = set(self.attention_layers)
        for layer, holder in self.weights_from:
            if not 0 <= holder < layer < self.n_layers or holder in layers or len(set(layers)) != len(layers):
                why = _("each layer must run the weights of an earlier layer, one that holds them")
                raise FFNError("weights_from", self.weights_from, why)
            same_attention = layer not in attends or self.attention_of(layer) == self.attention_of(holder)
            alike = self.ffn_of(layer) is self.ffn_of(holder) and same_attention
            if (layer in attends) != (holder in attends) or not alike:
                raise FFNError("weights_from", self.weights_from, _("a layer and the one whose weights it runs must be alike"))

    @property
    def reused_layers(self) -> tuple[int, ...]:
        """The layers that run an earlier layer's attention and FFN weights (weights_from)."""
        return tuple(sorted(layer for layer, _holder in self.weights_from))

    def _check_attention_kinds(self) -> None:
        seen: set[int] = set()
        for kind in self.attention_kinds:
            if kind.attention.d_model != self.d_model:
                why = _("must equal hidden_size ({d_model})").format(d_model=self.d_model)
                raise FFNError("attention_kinds.d_model", kind.attention.d_model, why)
            layers = set(kind.layers)
            if not layers or layers & seen or layers - set(self.attention_layers):
                raise FFNError("attention_kinds", kind.layers, _("must be attention layers of one kind each"))
            seen |= layers

    def _check_ffn(self, field: str, spec: FFNSpec | None, *, needed: bool, moe: bool) -> None:
        if spec is None:
            if needed:
                raise FFNError(field, None, _("is needed: some layers use it"))
            return
        if spec.d_model != self.d_model:
            raise FFNError(f"{field}.d_model", spec.d_model, _("must equal hidden_size ({d_model})").format(d_model=self.d_model))
        if (spec.mixture is not None) != moe:
            raise FFNError(
                f"{field}.variant", spec.variant, _("must be a mixture of experts") if moe else _("must not be a mixture of experts")
            )

    @property
    def index_flops_per_key(self) -> int:
        """An indexer's score FLOPs for each cached key it reads: 2 a head and element, a block's
        share where it scores blocks of index_block keys (QSA's, a block that has not closed counted
        by its share), to the nearest FLOP."""
        return round(2 * self.index_heads * self.index_key_width / self.index_block)

    @property
    def dense_layers(self) -> tuple[int, ...]:
        """The layers that use `dense_ffn`: neither MoE nor without an FFN."""
        other = set(self.moe_layers) | set(self.no_ffn_layers)
        return tuple(i for i in range(self.n_layers) if i not in other)

    @property
    def ffn_layers(self) -> tuple[int, ...]:
        """The layers that have an FFN, dense or MoE."""
        free = set(self.no_ffn_layers)
        return tuple(i for i in range(self.n_layers) if i not in free)

    @property
    def attention_layers(self) -> tuple[int, ...]:
        """The layers that use `attention` (every layer but a hybrid's mixer layers and the
        layers without a token mixer)."""
        alone = set(self.mixer.layers) - set(self.beside_attention) if self.mixer is not None else set()
        other = set(self.no_mixer_layers) | alone
        return tuple(i for i in range(self.n_layers) if i not in other)

    def ffn_of(self, layer: int) -> FFNSpec | None:
        """Layer `layer`'s FFN: `moe_ffn`, `dense_ffn`, or None for a layer without one."""
        if layer in self.no_ffn_layers:
            return None
        if layer in self.moe_layers:
            return self.moe_ffn
        return self._by_width[self.dense_widths[layer]] if self.dense_widths else self.dense_ffn

    @property
    def ffn_groups(self) -> tuple[tuple[FFNSpec, tuple[int, ...]], ...]:
        """Each FFN with the layers that run it: the dense groups, then the MoE layers."""
        moe = ((self.moe_ffn, self.moe_layers),) if self.moe_ffn is not None and self.moe_layers else ()
        return (*self.dense_groups, *moe)

    @property
    def dense_groups(self) -> tuple[tuple[FFNSpec, tuple[int, ...]], ...]:
        """The dense layers by FFN: (dense_ffn, dense_layers), or one group a width where they differ."""
        if self.dense_ffn is None or not self.dense_layers:
            return ()
        if not self.dense_widths:
            return ((self.dense_ffn, self.dense_layers),)
        groups = ((ffn, tuple(i for i in self.dense_layers if self.dense_widths[i] == w)) for w, ffn in self._by_width.items())
        return tuple((ffn, layers) for ffn, layers in groups if layers)

    def mixer_label(self, layer: int) -> str:
        """What mixes tokens in `layer`: 'attention', the mixer's kind ('Mamba-2 + attention' where
        both run side by side), or '' for none."""
        if layer in self.no_mixer_layers:
            return ""
        if self.mixer is not None and layer in self.mixer.layers:
            if layer not in self.beside_attention:
                return self.mixer.kind
            # a decoder layer attends to its own tokens, then to the encoder's output
            cross = isinstance(self.mixer.scan, SourceAttention)
            return Message(N_("attention + {mixer}") if cross else N_("{mixer} + attention"), mixer=self.mixer.kind)
        return "attention"

    def with_source_tokens(self, tokens: int) -> ModelSpec:
        """The model decoding against a source of `tokens` tokens (--source-len) in place of the
        most its encoder hands on: what its cross-attention keeps and scores a token."""
        mixer = self.mixer
        scan = mixer.scan if mixer is not None else None
        if mixer is None or not isinstance(scan, SourceAttention) or scan.source != "encoder":
            raise FFNError("source_len", tokens, _("{name} attends to no encoder's output").format(name=self.name))
        check_int("source_len", tokens)
        if scan.fixed and tokens != scan.tokens:
            why = _("{name}'s encoder pads every input to its window: it always hands on {most:,} tokens")
            raise FFNError("source_len", tokens, why.format(name=self.name, most=scan.tokens))
        if not scan.unsized and tokens > scan.tokens:
            why = _("{name}'s encoder hands on at most {most:,} tokens").format(name=self.name, most=scan.tokens)
            raise FFNError("source_len", tokens, why)
        return replace(self, mixer=replace(mixer, scan=replace(scan, tiles=1, patches=tokens), state_sized=True))

    @property
    def source_unsized(self) -> bool:
        """Its layers attend to an encoder's output of a length the config does not say (UNSIZED_SOURCE)."""
        return self.mixer is not None and self.mixer.unsized_source

    @property
    def attention_layer_params(self) -> int:
        """One attention layer's parameters: the AttentionSpec's and attention_extra."""
        return _own_kind(self).params

    @property
    def attention_layer_flops(self) -> int:
        """One attention layer's projection FLOPs per token, attention_extra's Linear weights included."""
        return _own_kind(self).flops

    def _kind_of(self, layer: int) -> AttentionKind | None:
        return next((k for k in self.attention_kinds if layer in k.layers), None)

    def attention_of(self, layer: int) -> AnyAttention:
        """Layer `layer`'s attention: its kind's, else `attention`."""
        kind = self._kind_of(layer)
        return kind.attention if kind is not None else self.attention

    def attention_extra_of(self, layer: int) -> tuple[ParamTensor, ...]:
        """The tensors beside layer `layer`'s AttentionSpec: its kind's, else attention_extra."""
        kind = self._kind_of(layer)
        return kind.extra if kind is not None else self.attention_extra

    @property
    def attention_groups(self) -> tuple[tuple[AnyAttention, tuple[ParamTensor, ...], tuple[int, ...]], ...]:
        """(attention, the tensors beside it, its layers), one a shape: `attention` in the
        attention layers no kind takes, then each AttentionKind (a group without layers left out)."""
        taken = {i for k in self.attention_kinds for i in k.layers}
        own = tuple(i for i in self.attention_layers if i not in taken)
        groups = [(self.attention, self.attention_extra, own)] if own or not self.attention_kinds else []
        return (*groups, *((k.attention, k.extra, k.layers) for k in self.attention_kinds))

    @property
    def head_rows(self) -> int:
        """The LM head's rows: the logits a token gets."""
        return self.lm_head_rows or self.vocab_size

    def layers_of(self, extra: ExtraPart) -> tuple[int, ...] | None:
        """The layers that run `extra` (its own, else every layer), or None for a part beside the
        layers; they hold it too, but for a shared part (held_layers_of)."""
        return (extra.layers or tuple(range(self.n_layers))) if extra.per_layer else None

    def held_layers_of(self, extra: ExtraPart) -> tuple[int, ...] | None:
        """The layers that hold `extra`'s tensors: for a shared part, in place of each layer that runs
        an earlier layer's weights (weights_from), the layer that holds them (a part the later passes
        alone run, Inkling 2 Loop's message gates, held by the layers of the first)."""
        layers = self.layers_of(extra)
        if layers is None or not extra.shared:
            return layers
        holder = dict(self.weights_from)
        return tuple(sorted({holder.get(i, i) for i in layers}))

    def copies_of(self, extra: ExtraPart) -> int:
        """How many copies of `extra`'s tensors a token runs: its copies in each layer that runs it, or
        in the model (for one not shared, as many as the model holds)."""
        layers = self.layers_of(extra)
        return extra.copies * (1 if layers is None else len(layers))

    @property
    def extra_flops(self) -> int:
        """The matmul FLOPs per token of every ExtraPart, all copies."""
        return sum(e.flops * self.copies_of(e) for e in self.extras)

    def kv_tensors_of(self, layer: int) -> tuple[ParamTensor, ...]:
        """Layer `layer`'s key and value projections and key norm, as its shape has them: what a
        KV-shared layer of that shape lacks."""
        return kv_tensors(self.attention_of(layer))

    def attention_params_of(self, layer: int) -> int:
        """Layer `layer`'s attention parameters (an attention layer's): its shape's, less the keys'
        and values' in a KV-shared layer."""
        kind = self._kind_of(layer) or _own_kind(self)
        if layer not in self.kv_shared_layers:
            return kind.params
        return kind.params - sum(t.count for t in self.kv_tensors_of(layer))

    def attention_flops_of(self, layer: int) -> int:
        """Layer `layer`'s attention projection FLOPs per token (an attention layer's): no keys or
        values projected in a KV-shared layer."""
        kind = self._kind_of(layer) or _own_kind(self)
        if layer not in self.kv_shared_layers:
            return kind.flops
        kv = self.kv_tensors_of(layer)
        weights = sum(t.count for t in kv if t.name.endswith("proj.weight"))
        biases = sum(t.count for t in kv if t.name.endswith("proj.bias"))
        return kind.flops - 2 * weights - biases

    @property
    def attention_flops(self) -> int:
        """The projection FLOPs per token of every attention layer together."""
        return sum(self.attention_flops_of(i) for i in self.attention_layers)

    @property
    def is_moe(self) -> bool:
        return bool(self.moe_layers)

    def extra_of(self, ffn: FFNSpec) -> tuple[ParamTensor, ...]:
        """The tensors each layer of `ffn` holds beside its FFNSpec's: `moe_extra` in the MoE
        layers, none in the dense ones."""
        return self.moe_extra if ffn == self.moe_ffn else ()

    def routing_of(self, ffn: FFNSpec) -> str:
        """The routing rules, in words, of the layers of `ffn`: the MoE layers' (`routing`), or ''."""
        return self.routing if ffn == self.moe_ffn else ""

    def real_picks(self, ffn: FFNSpec) -> float:
        """Real experts a token of a layer of `ffn` runs through, in expectation: its top-k, or
        with zero experts in the pool k · E / (E + Z), each expert of the pool, real or zero,
        picked equally often (a balanced router: the config states no other rate)."""
        k = ffn.active_experts
        if ffn != self.moe_ffn or not self.zero_experts:
            return k
        return k * ffn.experts / (ffn.experts + self.zero_experts)

    def dropped_router(self, ffn: FFNSpec) -> int:
        """Parameters of `ffn`'s own E × d router that the model does not hold (router_in_extra), else 0."""
        return ffn.experts * ffn.d_model if self.router_in_extra and ffn == self.moe_ffn else 0

    def ffn_matmul_flops(self, ffn: FFNSpec) -> int:
        """Matmul FLOPs per token of one layer of `ffn`, every pick a real expert: its variant's and
        the Linear weights beside it (moe_extra: LongCat-Flash's router rows for its zero experts;
        Zaya's router in place of the variant's)."""
        beside = sum(t.count for t in self.extra_of(ffn) if len(t.shape) == 2 and ".weight" in t.name)
        return matmul_flops_per_token(ffn) + 2 * beside - 2 * self.dropped_router(ffn)

    def mean_ffn_flops(self, ffn: FFNSpec) -> float:
        """Matmul FLOPs per token of one layer of `ffn` on average: with zero experts in the pool,
        only its real picks' (real_picks) run an expert."""
        flops: float = self.ffn_matmul_flops(ffn)
        skipped = ffn.active_experts - self.real_picks(ffn)
        if skipped:
            flops -= skipped * sum(2 * t.count for t in one_expert(ffn) if len(t.shape) == 2)
        return flops

    def least_picks(self, ffn: FFNSpec) -> int:
        """The fewest real experts a token of a layer of `ffn` runs through: k less the zero experts."""
        k = ffn.active_experts
        return max(0, k - self.zero_experts) if ffn == self.moe_ffn else k

    @property
    def moe_extra_params(self) -> int:
        """Parameters of one MoE layer beside its FFNSpec's (moe_extra)."""
        return sum(t.count for t in self.moe_extra)

    @property
    def norm_params(self) -> int:
        """Parameters of one norm over d_model."""
        return NORM_KINDS[self.norm] * self.d_model

    @property
    def embedding_width(self) -> int:
        """The columns of the token table (and the position and token-type tables beside it)."""
        return self.embedding_dim or self.d_model

    @property
    def head_width(self) -> int:
        """The width the LM head reads: each logit is a dot product of this many."""
        return self.lm_head_dim or self.d_model


def one_expert(ffn: FFNSpec) -> tuple[ParamTensor, ...]:
    """One routed expert's tensors (experts.0.*, as build_ffn names them); none in a dense FFN."""
    return tuple(t for t in param_tensors(ffn) if t.name.startswith("experts.0."))


def kv_tensors(attention: AnyAttention) -> tuple[ParamTensor, ...]:
    """An attention's key and value projections and key norm: what a KV-shared layer of its shape lacks."""
    return tuple(t for t in attention.tensors() if t.name.startswith(KV_TENSORS))


def layer_ranges(layers: tuple[int, ...]) -> str:
    """(0, 1, 2, 5) → '0–2, 5', (0, 2, 4, 6, 8) → '0, 2, …, 8', (0, 1, 3, 5, …, 59) → '0–1, 3, 5, …, 59':
    which layers a row covers, short (a list in the reader's language: '0、2、…、8' in Chinese). Adjacent
    layers are a range; _STRIDED or more evenly spaced ones (every other layer) a series."""
    parts: list[str] = []
    i = 0
    while i < len(layers):
        j = i + 1
        if j < len(layers) and layers[j] == layers[i] + 1:  # a range of adjacent layers
            while j + 1 < len(layers) and layers[j + 1] == layers[j] + 1:
                j += 1
            parts.append(f"{layers[i]}–{layers[j]}")
            i = j + 1
            continue
        if j < len(layers):  # a series: as long as the step holds
            step = layers[j] - layers[i]
            while j + 1 < len(layers) and layers[j + 1] - layers[j] == step:
                j += 1
            if j + 1 < len(layers) and layers[j + 1] == layers[j] + 1:  # its last layer starts a range
                j -= 1
            if j - i + 1 >= _STRIDED:
                parts += [str(layers[i]), str(layers[i + 1]), "…", str(layers[j])]
                i = j + 1
                continue
        parts.append(str(layers[i]))
        i += 1
    return Message.listed(parts)
