"""ModelSpec: a whole Transformer as the accounting sees it, frozen and validated.

The FFN of every layer is an FFNSpec (dense, gated or MoE), so its parameters and FLOPs come
from ffn_cli.accounting, the same code the built torch module is checked against; attention is
an AttentionSpec. Everything else (embeddings, norms, head, pooler) is a handful of integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ffn_cli.accounting import ParamTensor
from ffn_cli.attention import AnyAttention
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.mixers import LinearMixer
from ffn_cli.models.vision import VisionTower
from ffn_cli.spec import FFNSpec, check_int

__all__ = ["NORM_KINDS", "ModelSpec", "NormKind", "layer_ranges"]

NormKind = Literal["rmsnorm", "layernorm", "layernorm_no_affine", "layernorm_no_bias"]
# Parameters of one norm over d_model, in units of d: RMSNorm a weight, LayerNorm weight and
# bias, OLMo-1's LayerNorm neither, Cohere's LayerNorm a weight only.
NORM_KINDS: dict[str, int] = {"rmsnorm": 1, "layernorm": 2, "layernorm_no_affine": 0, "layernorm_no_bias": 1}
# Deeper than any published model by far; beyond it a config is a typo.
MAX_LAYERS = 4096
MAX_VOCAB = 1 << 24


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
    # Tensors of each attention layer beside its AttentionSpec's, each a Linear weight run once per
    # token: Qwen3-Next's output gate, the second half of a q_proj twice as wide.
    attention_extra: tuple[ParamTensor, ...] = ()
    # Layers that are one block each (Nemotron-H): a token mixer and no FFN, or an FFN and no
    # token mixer. Every other layer has both.
    no_ffn_layers: tuple[int, ...] = ()
    no_mixer_layers: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        check_int("hidden_size", self.d_model)
        check_int("num_hidden_layers", self.n_layers, maximum=MAX_LAYERS)
        check_int("vocab_size", self.vocab_size, maximum=MAX_VOCAB)
        check_int("max_position_embeddings", self.max_positions, minimum=0)
        check_int("type_vocab_size", self.type_vocab_size, minimum=0, maximum=MAX_VOCAB)
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
        for field in ("no_ffn_layers", "no_mixer_layers"):
            value = tuple(sorted(set(getattr(self, field))))
            if any(not 0 <= i < self.n_layers for i in value):
                raise FFNError(field, getattr(self, field), _("must be layer indices in [0, {n_layers})").format(n_layers=self.n_layers))
            object.__setattr__(self, field, value)
        if set(self.no_ffn_layers) & set(self.no_mixer_layers):
            raise FFNError("no_mixer_layers", self.no_mixer_layers, _("a layer without an FFN needs a token mixer"))
        if set(self.no_ffn_layers) & set(layers):
            raise FFNError("no_ffn_layers", self.no_ffn_layers, _("a MoE layer has an FFN"))
        if self.mixer is not None and set(self.no_mixer_layers) & set(self.mixer.layers):
            raise FFNError("no_mixer_layers", self.no_mixer_layers, _("a {kind} layer has a token mixer").format(kind=self.mixer.kind))
        self._check_ffn("moe_ffn", self.moe_ffn, needed=bool(layers), moe=True)
        self._check_ffn("dense_ffn", self.dense_ffn, needed=bool(self.dense_layers), moe=False)

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
        other = set(self.no_mixer_layers) | (set(self.mixer.layers) if self.mixer is not None else set())
        return tuple(i for i in range(self.n_layers) if i not in other)

    def ffn_of(self, layer: int) -> FFNSpec | None:
        """Layer `layer`'s FFN: `moe_ffn`, `dense_ffn`, or None for a layer without one."""
        if layer in self.no_ffn_layers:
            return None
        return self.moe_ffn if layer in self.moe_layers else self.dense_ffn

    def mixer_label(self, layer: int) -> str:
        """What mixes tokens in `layer`: 'attention', the mixer's kind, or '' for none."""
        if layer in self.no_mixer_layers:
            return ""
        return self.mixer.kind if self.mixer is not None and layer in self.mixer.layers else "attention"

    @property
    def attention_layer_params(self) -> int:
        """One attention layer's parameters: the AttentionSpec's and attention_extra."""
        return self.attention.params + sum(t.count for t in self.attention_extra)

    @property
    def attention_layer_flops(self) -> int:
        """One attention layer's projection FLOPs per token, attention_extra's Linear weights included."""
        weights = sum(t.count for t in self.attention_extra if ".weight" in t.name)
        biases = sum(t.count for t in self.attention_extra if ".bias" in t.name)
        return self.attention.projection_flops_per_token() + 2 * weights + biases

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

    @property
    def moe_extra_params(self) -> int:
        """Parameters of one MoE layer beside its FFNSpec's (moe_extra)."""
        return sum(t.count for t in self.moe_extra)

    @property
    def norm_params(self) -> int:
        """Parameters of one norm over d_model."""
        return NORM_KINDS[self.norm] * self.d_model


def layer_ranges(layers: tuple[int, ...]) -> str:
    """(0, 1, 2, 5) → '0–2, 5': which layers a row covers, short."""
    parts: list[str] = []
    start = prev = None
    for i in (*layers, None):
        if i is not None and prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}–{prev}")
        start = prev = i
    return ", ".join(parts)
