"""The attention modules of `ffn trace --block`, one per kind the accounting (`attention.py`) knows.

`SelfAttention`: multi-head attention with grouped-query heads (MHA, GQA, MQA), with q/k norms
per head (Qwen3, Gemma 3; LayerNorm with a bias as Phi) or over the whole projections (OLMo-2),
and gpt-oss's learned sink logit per head. `LatentAttention`: DeepSeek-V2/V3's multi-head latent
attention. Parameters are named as `spec.tensors()` names them (Hugging Face's names).

Positions are left out, as the block leaves them out: no rotary turns the rope part of q and k,
which is split off and joined back with the model's shapes. Every forward uses functional ops,
each step inside a named region (`regions.py`), so the trace recorder sees and labels each op;
each module names its steps' formulas (`step_formula`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ffn_cli.attention import AnyAttention, AttentionSpec, LatentAttentionSpec
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.regions import NamedSteps, StepNaming, region

__all__ = ["AttentionModule", "LatentAttention", "QKNorm", "RMSNorm", "SelfAttention", "attend", "build_attention"]

# transformers' DeepseekV3Attention builds q_a_layernorm and kv_a_layernorm with the RMSNorm's
# default eps, not the config's rms_norm_eps.
LATENT_NORM_EPS = 1e-6


class RMSNorm(nn.Module):
    """x / rms(x) · γ, written out so every op is visible (no fused kernel)."""

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


class QKNorm(nn.Module):
    """q_norm / k_norm: RMSNorm over groups of `group` features of a (B, T, width) projection:
    each head's d_h (Qwen3, Gemma 3) or the whole width (OLMo-2); with a bias, LayerNorm (Phi)."""

    def __init__(self, width: int, group: int, eps: float, *, bias: bool) -> None:
        super().__init__()
        self.width, self.group, self.eps = width, group, eps
        self.weight = nn.Parameter(torch.ones(group))
        self.bias = nn.Parameter(torch.zeros(group)) if bias else None

    @property
    def formula(self) -> str:
        kind = "LayerNorm: (x−μ)/σ·γ + β" if self.bias is not None else "RMSNorm: x/rms(x)·γ"
        where = "over the whole projection" if self.group == self.width else f"over each head's {self.group}"
        return f"{kind}, {where}"

    def forward(self, x: Tensor) -> Tensor:
        b, n, _ = x.shape
        h = x.view(b, n, self.width // self.group, self.group)  # (B, T, heads, d_h), or (B, T, 1, width)
        if self.bias is not None:
            h = F.layer_norm(h, (self.group,), self.weight, self.bias, self.eps)
        else:
            h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight
        return h.reshape(b, n, self.width)


def attend(q: Tensor, k_t: Tensor, v: Tensor, *, batch: int, scale: float, sinks: Tensor | None = None) -> Tensor:
    """softmax(Q·Kᵀ·scale)·V over (B·H, T, ·) heads, merged back to (B, T, H·d_v); with `sinks`,
    each head's sink logit joins the softmax and its column is then dropped (gpt-oss)."""
    bh, n, _ = q.shape
    with region("scores"):
        scores = torch.bmm(q, k_t) * scale  # (B·H, T, T)
    if sinks is not None:
        with region("sinks"):
            sink = sinks.view(1, -1, 1, 1).expand(batch, -1, n, 1).reshape(bh, n, 1)  # (B·H, T, 1)
            scores = torch.cat((scores, sink), dim=-1)  # (B·H, T, T + 1)
    with region("softmax"):
        probs = torch.softmax(scores, dim=-1)
        if sinks is not None:
            probs = probs[..., :-1]  # the sink's share is dropped: the weights sum to less than 1
    with region("context"):
        context = torch.bmm(probs, v)  # (B·H, T, d_v)
    with region("merge"):
        return context.view(batch, bh // batch, n, -1).transpose(1, 2).reshape(batch, n, -1)  # (B, T, H·d_v)


def _linear_formula(layer: nn.Linear, text: str) -> str:
    return text + (" + b" if layer.bias is not None else "")


class SelfAttention(nn.Module, NamedSteps):
    """Multi-head attention with grouped-query heads; q_proj … o_proj named as in LLaMA, then the
    spec's q_norm / k_norm and sinks.

    Projections (and their q/k norms) run first, then the head arithmetic as explicit batched
    matmuls over (B·H, T, d_head), so the recorder sees each of: heads, scores, sinks, softmax,
    context, merge.
    """

    step_naming = StepNaming.REGIONS

    def __init__(self, spec: AttentionSpec, eps: float = 1e-5) -> None:
        super().__init__()
        d, q_dim, kv_dim = spec.d_model, spec.q_dim, spec.kv_dim
        self.n_heads, self.n_kv_heads, self.head_dim = int(spec.n_heads or 1), int(spec.n_kv_heads or 1), int(spec.head_dim or 1)
        self.q_proj = nn.Linear(d, q_dim, bias=spec.qkv_bias)
        self.k_proj = nn.Linear(d, kv_dim, bias=spec.qkv_bias)
        self.v_proj = nn.Linear(d, kv_dim, bias=spec.qkv_bias)
        self.o_proj = nn.Linear(q_dim, d, bias=spec.o_bias)
        self.q_norm: QKNorm | None = None
        self.k_norm: QKNorm | None = None
        if spec.qk_norm != "none":
            per_head = spec.qk_norm == "head"
            self.q_norm = QKNorm(q_dim, self.head_dim if per_head else q_dim, eps, bias=spec.qk_norm_bias)
            self.k_norm = QKNorm(kv_dim, self.head_dim if per_head else kv_dim, eps, bias=spec.qk_norm_bias)
        self.sinks = nn.Parameter(torch.zeros(self.n_heads)) if spec.sinks else None

    def step_formula(self, step: str) -> str | Message:
        """The formula beside each step; a Message where it has words, said in the reader's language."""
        h, kv, dh = self.n_heads, self.n_kv_heads, self.head_dim
        heads = Message.of(N_("split into heads: (B, T, H·d_h) → (B·H, T, d_h), H={h}, d_h={dh}"), h=h, dh=dh)
        if kv < h:
            heads += Message.of(N_("; K, V repeated {times}× (GQA)"), times=h // kv)
        softmax = (
            N_("P = softmax(S) over keys and the sink; its column dropped") if self.sinks is not None else N_("P = softmax(S) over keys")
        )
        formulas = {
            "q_proj": _linear_formula(self.q_proj, "x·W_Qᵀ"),
            "k_proj": _linear_formula(self.k_proj, "x·W_Kᵀ"),
            "v_proj": _linear_formula(self.v_proj, "x·W_Vᵀ"),
            "o_proj": _linear_formula(self.o_proj, "(P·V)·W_Oᵀ"),
            "q_norm": self.q_norm.formula if self.q_norm is not None else "",
            "k_norm": self.k_norm.formula if self.k_norm is not None else "",
            "heads": heads,
            "scores": "S = Q·Kᵀ/√d_h",
            "sinks": N_("append each head's learned sink logit: (B·H, T, T) → (B·H, T, T+1)"),
            "softmax": softmax,
            "context": "P·V",
            "merge": N_("concat heads: (B·H, T, d_h) → (B, T, H·d_h)"),
        }
        return formulas.get(step, step)

    def _heads(self, t: Tensor, heads: int) -> Tensor:
        """(B, T, heads·d_h) → (B·H, T, d_h); K and V heads are repeated to H for GQA."""
        b, n, _ = t.shape
        t = t.view(b, n, heads, self.head_dim).transpose(1, 2)  # (B, heads, T, d_h)
        groups = self.n_heads // heads
        if groups > 1:
            t = t[:, :, None].expand(b, heads, groups, n, self.head_dim)  # (B, Hkv, g, T, d_h)
        return t.reshape(b * self.n_heads, n, self.head_dim)

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # (B, T, H·d_h), (B, T, Hkv·d_h) ×2
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        with region("heads"):
            q = self._heads(q, self.n_heads)  # (B·H, T, d_h)
            k_t = self._heads(k, self.n_kv_heads).transpose(1, 2)  # (B·H, d_h, T)
            v = self._heads(v, self.n_kv_heads)  # (B·H, T, d_h)
        merged = attend(q, k_t, v, batch=x.shape[0], scale=1.0 / math.sqrt(self.head_dim), sinks=self.sinks)
        return self.o_proj(merged)


class LatentAttention(nn.Module, NamedSteps):
    """Multi-head latent attention (DeepSeek-V2/V3), named as transformers' DeepseekV3Attention.

    q: q_a_proj (d → r_q) → q_a_layernorm → q_b_proj (→ H·(d_nope + d_rope)), or one q_proj.
    kv: kv_a_proj_with_mqa (d → r_kv + d_rope), split into the latent c_kv and one rope key
    shared by every head; c_kv → kv_a_layernorm → kv_b_proj (→ H·(d_nope + d_v)), per head
    k_nope and v. Scores over d_nope + d_rope scaled by its −½ power (transformers also
    multiplies a yarn rope scaling's mscale² in: values only, no FLOPs; left out), then
    o_proj (H·d_v → d). The latent kv is expanded to every head, no weight absorption.
    """

    step_naming = StepNaming.REGIONS

    def __init__(self, spec: LatentAttentionSpec, eps: float = LATENT_NORM_EPS) -> None:
        super().__init__()
        self.spec = spec
        d, h = spec.d_model, spec.n_heads
        # Registered in spec.tensors()' order: the projections, then the two norms.
        if spec.q_lora_rank is None:
            self.q_proj = nn.Linear(d, h * spec.qk_head_dim, bias=False)
        else:
            self.q_a_proj = nn.Linear(d, spec.q_lora_rank, bias=spec.bias)
            self.q_b_proj = nn.Linear(spec.q_lora_rank, h * spec.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(d, spec.kv_lora_rank + spec.qk_rope_head_dim, bias=spec.bias)
        self.kv_b_proj = nn.Linear(spec.kv_lora_rank, h * (spec.qk_nope_head_dim + spec.v_head_dim), bias=False)
        self.o_proj = nn.Linear(h * spec.v_head_dim, d, bias=spec.bias)
        if spec.q_lora_rank is not None:
            self.q_a_layernorm = RMSNorm(spec.q_lora_rank, eps)
        self.kv_a_layernorm = RMSNorm(spec.kv_lora_rank, eps)

    def step_formula(self, step: str) -> str | Message:
        s = self.spec
        qk = f"{s.qk_nope_head_dim}+{s.qk_rope_head_dim}"
        formulas = {
            "q_proj": N_("x·W_Qᵀ: d → H·(d_nope + d_rope)"),
            "q_a_proj": N_("q low-rank down: x·W_qaᵀ, d → r_q"),
            "q_a_layernorm": N_("RMSNorm: c_q/rms(c_q)·γ over r_q"),
            "q_b_proj": N_("q up to heads: r_q → H·(d_nope + d_rope)"),
            "kv_a_proj_with_mqa": N_("kv down: x·W_kvaᵀ, d → latent r_kv + one rope key d_rope"),
            "kv_split": N_("split: latent c_kv (r_kv) | rope key k_r (d_rope, shared by every head)"),
            "kv_a_layernorm": N_("RMSNorm: c_kv/rms(c_kv)·γ over r_kv"),
            "kv_b_proj": N_("kv latent up to heads: r_kv → H·(d_nope + d_v)"),
            "heads": Message.of(
                N_("split into heads, H={h}: q, k (B·H, T, {qk}), k_r repeated to every head; v (B·H, T, {v})"),
                h=s.n_heads,
                qk=qk,
                v=s.v_head_dim,
            ),
            "scores": "S = Q·Kᵀ/√(d_nope + d_rope)",
            "softmax": N_("P = softmax(S) over keys"),
            "context": "P·V",
            "merge": N_("concat heads: (B·H, T, d_v) → (B, T, H·d_v)"),
            "o_proj": "(P·V)·W_Oᵀ: H·d_v → d",
        }
        text = formulas.get(step, step)
        layer = getattr(self, step, None)
        return _linear_formula(layer, text) if isinstance(layer, nn.Linear) and isinstance(text, str) else text

    def _query(self, x: Tensor) -> Tensor:
        if self.spec.q_lora_rank is None:
            return self.q_proj(x)  # (B, T, H·(d_nope + d_rope))
        return self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))  # (B, T, r_q) → (B, T, H·(d_nope + d_rope))

    def _heads(self, q: Tensor, kv: Tensor, k_rope: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q (B, T, H·(n + r)), kv (B, T, H·(n + v)), k_rope (B, T, r) → Q, Kᵀ, V over (B·H, T, ·).
        The rope parts are split off and joined back where rotary would turn them."""
        s = self.spec
        b, n, _ = q.shape
        h, nope, rope, dv = s.n_heads, s.qk_nope_head_dim, s.qk_rope_head_dim, s.v_head_dim
        q_nope, q_rope = torch.split(q.view(b, n, h, nope + rope).transpose(1, 2), [nope, rope], dim=-1)  # (B, H, T, n | r)
        q = torch.cat((q_nope, q_rope), dim=-1).reshape(b * h, n, nope + rope)  # (B·H, T, n + r)
        k_nope, v = torch.split(kv.view(b, n, h, nope + dv).transpose(1, 2), [nope, dv], dim=-1)  # (B, H, T, n | v)
        k_rope = k_rope.view(b, 1, n, rope).expand(b, h, n, rope)  # the one rope key, for every head
        k = torch.cat((k_nope, k_rope), dim=-1).reshape(b * h, n, nope + rope)  # (B·H, T, n + r)
        return q, k.transpose(1, 2), v.reshape(b * h, n, dv)

    def forward(self, x: Tensor) -> Tensor:
        s = self.spec
        q = self._query(x)
        compressed = self.kv_a_proj_with_mqa(x)  # (B, T, r_kv + d_rope)
        with region("kv_split"):
            latent, k_rope = torch.split(compressed, [s.kv_lora_rank, s.qk_rope_head_dim], dim=-1)
        kv = self.kv_b_proj(self.kv_a_layernorm(latent))  # (B, T, r_kv) → (B, T, H·(d_nope + d_v))
        with region("heads"):
            q, k_t, v = self._heads(q, kv, k_rope)
        merged = attend(q, k_t, v, batch=x.shape[0], scale=s.qk_head_dim**-0.5)
        return self.o_proj(merged)


AttentionModule = SelfAttention | LatentAttention


def build_attention(spec: AnyAttention, eps: float = 1e-5) -> AttentionModule:
    """The module for `spec`; `eps` is the q/k norms' (the model's norm epsilon)."""
    if isinstance(spec, LatentAttentionSpec):
        return LatentAttention(spec)
    if isinstance(spec, CompressedAttentionSpec):  # transformers' own module runs it; ffn builds none
        raise FFNRuntimeError(_("ffn builds no module for DeepSeek-V4's compressed attention"))
    return SelfAttention(spec, eps)
