"""Why the FFN holds about two thirds of a layer's parameters, and what it holds here.

The classic block (d_ff = 4·d, plain multi-head attention): the FFN's two matrices hold
2·d·4d = 8·d², attention's W_Q, W_K, W_V, W_O 4·d², a ratio of 2 and a share of 8/12. A gated FFN
has three matrices (3·d·d_ff), grouped-query attention shrinks K and V to kv = kv_heads·head_dim,
and a mixture holds E experts of which a token runs k. The numbers come from the accounting the
tables print; this module only takes them apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ffn_cli.accounting import ParamTensor, param_tensors
from ffn_cli.attention import AnyAttention, AttentionSpec
from ffn_cli.models.layer import FFNReport, attention_formula, group_tensors
from ffn_cli.spec import FFNSpec

# A type only: explaining one FFN (`ffn params --variant`) loads no model counting.
if TYPE_CHECKING:
    from ffn_cli.models.count import ModelParams

__all__ = ["CLASSIC_RATIO", "BlockExplain", "explain_ffn", "explain_model"]

# FFN 2·d·4d = 8·d² over attention 4·d²: the ratio of the classic block.
CLASSIC_RATIO = 2.0


@dataclass(frozen=True)
class BlockExplain:
    """One FFN (an expert's, for a mixture) taken apart, beside its attention, and the totals the
    ratio is of: one layer for an FFN, every layer for a model."""

    d_model: int
    d_ff: int
    matrices: int  # weight matrices of width·d_ff elements in one FFN: 2 dense, 3 gated
    ffn_weights: int  # matrices · width · d_ff
    ffn_one: int  # one FFN's parameters, biases included
    experts: int  # 0 without a mixture
    active_experts: int
    attention: AnyAttention
    attention_formula: str
    layers: int  # the layers the totals cover
    ffn_params: int
    ffn_active_params: int
    attention_params: int
    width: int  # what one FFN (an expert) reads and writes: d_model, or a latent MoE's latent
    attention_beside: tuple[ParamTensor, ...] = ()  # one layer's tensors beside its attention (Qwen3.5's output gate)
    mixers: bool = False  # whether attention_params holds a hybrid's mixers too (its token mixing)
    held_once: bool = False  # some layers run weights another layer holds (Zamba's blocks, Inkling 2 Loop's passes): counted once
    # what a token runs of attention_params, where less (JetMoE's attention experts it does not pick, a
    # cross-attention's k and v, run once a source); None: all
    attention_active_params: int | None = None
    # A hybrid's mixer, or an encoder-decoder's cross-attention, counted with the attention: its kind (an
    # English id or a Message), one layer's parameters, the layers that hold it, and how many of them
    # run it beside attention (a decoder layer's cross-attention, Zamba's hybrid layers), not in its place.
    mixer_kind: str = ""
    mixer_params: int = 0
    mixer_layers: int = 0
    mixer_beside: int = 0

    @property
    def ratio(self) -> float:
        return self.ffn_params / self.attention_params

    @property
    def attention_active(self) -> int:
        """What a token runs of attention_params."""
        return self.attention_params if self.attention_active_params is None else self.attention_active_params

    @property
    def active_ratio(self) -> float:
        return self.ffn_active_params / self.attention_active

    @property
    def share(self) -> float:
        """The FFN's share of FFN + attention."""
        return self.ffn_params / (self.ffn_params + self.attention_params)

    @property
    def active_share(self) -> float:
        return self.ffn_active_params / (self.ffn_active_params + self.attention_active)

    @property
    def classic_ffn(self) -> int:
        """The classic block's FFN at this d_model: 2·d·4d = 8·d²."""
        return 8 * self.d_model**2

    @property
    def over_classic(self) -> float:
        """This FFN's (one expert's) weight matrices over the classic 8·d²."""
        return self.ffn_weights / self.classic_ffn

    @property
    def grouped(self) -> bool:
        """Whether K and V are narrower than Q (grouped-query or multi-query attention)."""
        a = self.attention
        return isinstance(a, AttentionSpec) and a.kv_dim < a.q_dim

    def data(self) -> dict[str, object]:
        return {
            "classic_ratio": CLASSIC_RATIO,
            "classic_share": CLASSIC_RATIO / (CLASSIC_RATIO + 1),
            "d_model": self.d_model,
            "d_ff": self.d_ff,
            "ffn_width": self.width,
            "ffn_matrices": self.matrices,
            "ffn_weight_params": self.ffn_weights,
            "classic_ffn_params": self.classic_ffn,
            "ffn_weights_over_classic": self.over_classic,
            "one_ffn_params": self.ffn_one,
            "experts": self.experts,
            "active_experts": self.active_experts,
            "attention_formula": self.attention_formula,
            "layers": self.layers,
            "ffn_params": self.ffn_params,
            "ffn_active_params": self.ffn_active_params,
            "attention_params": self.attention_params,
            "ffn_attention_ratio": self.ratio,
            "ffn_active_attention_ratio": self.active_ratio,
            "ffn_share": self.share,
            "ffn_active_share": self.active_share,
            "attention_active_params": self.attention_active,
            "mixer": {  # counted with the attention: a hybrid's mixer, an encoder-decoder's cross-attention
                "kind": str.__str__(self.mixer_kind),
                "params_per_layer": self.mixer_params,
                "layers": self.mixer_layers,
                "layers_beside_attention": self.mixer_beside,
            }
            if self.mixer_layers
            else None,
        }


def _parts(spec: FFNSpec) -> tuple[int, int, int]:
    """(matrices, their elements, the parameters of one FFN) from the accounting's tensors of
    the FFN a token runs through once: the spec's own, or one expert of a mixture (in its latent)."""
    width = spec.expert_shape().d_model
    one = FFNSpec(variant=spec.ffn_variant.name, d_model=width, d_ff=spec.hidden, bias=spec.bias)
    tensors = param_tensors(one)
    weights = sum(t.count for t in tensors if len(t.shape) == 2)
    return weights // (one.d_model * one.hidden), weights, sum(t.count for t in tensors)


def _experts(spec: FFNSpec) -> int:
    """The experts of a mixture, as the tensor table counts them (the copies of `experts.*`), or
    0 for one FFN."""
    copies = max(g.copies for g in group_tensors(param_tensors(spec)))
    return copies if copies > 1 else 0


def explain_ffn(r: FFNReport) -> BlockExplain:
    s = r.spec
    matrices, weights, one = _parts(s)
    return BlockExplain(
        s.d_model, s.hidden, matrices, weights, one, _experts(s), s.active_experts,
        r.attention, attention_formula(r.attention), 1, r.total_params, r.active_params, r.attention_params,
        s.expert_shape().d_model,
    )  # fmt: skip


def explain_model(m: ModelParams) -> BlockExplain:
    """The model's main FFN (the one most layers run) taken apart; the totals of every layer."""
    s = m.spec
    moe = s.moe_ffn is not None and len(s.moe_layers) * 2 >= s.n_layers
    ffn = s.moe_ffn if moe else s.dense_ffn or s.moe_ffn
    assert ffn is not None
    matrices, weights, one = _parts(ffn)
    return BlockExplain(
        s.d_model, ffn.hidden, matrices, weights, one, _experts(ffn), ffn.active_experts,
        s.attention, attention_formula(s.attention), s.n_layers, m.ffn_params, m.ffn_active_params, m.attention_params,
        ffn.expert_shape().d_model, s.attention_extra, s.mixer is not None, bool(s.weights_from), m.attention_active_params,
        *_mixer(m),
    )  # fmt: skip


def _mixer(m: ModelParams) -> tuple[str, int, int, int]:
    """(kind, one layer's parameters, its layers, those of them beside attention) of the model's mixer."""
    mixer = m.spec.mixer
    if mixer is None:
        return "", 0, 0, 0
    return mixer.kind, mixer.params, len(mixer.layers), len(set(mixer.layers) & set(m.spec.beside_attention))
