"""The FFN in its Transformer block: attention → residual → norm → FFN → residual → norm.

Post-norm, as the original Transformer and the tutorial's encoder layer, by default; pre-norm
(`x + f(norm(x))`, GPT-2 and LLaMA) and RMSNorm as options. Attention is bidirectional (an
encoder layer, no causal mask) with grouped-query heads. Every forward uses functional ops,
so the trace recorder sees each step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ffn_cli.accounting import ParamTensor, total_params
from ffn_cli.attention import AttentionSpec
from ffn_cli.errors import FFNError
from ffn_cli.modules import FFNModule, build_ffn, resolve_dtype
from ffn_cli.spec import FFNSpec

__all__ = ["NORMS", "BlockSpec", "RMSNorm", "SelfAttention", "TransformerBlock", "build_block"]

NORMS = ("layernorm", "rmsnorm")


@dataclass(frozen=True)
class BlockSpec:
    """One Transformer block around `ffn`; attention biases follow the FFN's bias setting."""

    ffn: FFNSpec
    attention: AttentionSpec
    norm: str = "layernorm"
    pre_norm: bool = False
    eps: float = 1e-5

    def __post_init__(self) -> None:
        if self.norm not in NORMS:
            raise FFNError("norm", self.norm, "choose one of " + ", ".join(NORMS))
        if self.attention.d_model != self.ffn.d_model:
            raise FFNError("d_model", self.attention.d_model, f"attention and FFN must share d_model ({self.ffn.d_model})")

    @classmethod
    def around(
        cls, ffn: FFNSpec, *, n_heads: int | None = None, n_kv_heads: int | None = None, norm: str = "layernorm", pre_norm: bool = False
    ) -> BlockSpec:
        bias = bool(ffn.bias)
        attention = AttentionSpec(ffn.d_model, n_heads, n_kv_heads, qkv_bias=bias, o_bias=bias)
        return cls(ffn, attention, norm.strip().lower(), pre_norm)

    def norm_tensors(self) -> list[ParamTensor]:
        d = self.ffn.d_model
        out = []
        for name in ("norm1", "norm2"):
            out.append(ParamTensor(f"{name}.weight", (d,)))
            if self.norm == "layernorm":
                out.append(ParamTensor(f"{name}.bias", (d,)))
        return out

    def param_counts(self) -> dict[str, int]:
        """Parameters by part, as build_block names them."""
        return {
            "attn": self.attention.params,
            "ffn": total_params(self.ffn),
            "norms": sum(t.count for t in self.norm_tensors()),
        }

    def as_dict(self) -> dict[str, object]:
        a = self.attention
        return {"n_heads": a.n_heads, "n_kv_heads": a.n_kv_heads, "head_dim": a.head_dim, "norm": self.norm, "pre_norm": self.pre_norm}


class RMSNorm(nn.Module):
    """x / rms(x) · γ, written out so every op is visible (no fused kernel)."""

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


class SelfAttention(nn.Module):
    """Multi-head attention with grouped-query heads; q_proj … o_proj named as in LLaMA.

    Projections run first, then the head arithmetic as explicit batched matmuls over
    (B·H, T, d_head), so the recorder sees each of: heads, scores, softmax, context, merge.
    """

    def __init__(self, spec: AttentionSpec) -> None:
        super().__init__()
        d, q_dim, kv_dim = spec.d_model, spec.q_dim, spec.kv_dim
        self.n_heads, self.n_kv_heads, self.head_dim = int(spec.n_heads or 1), int(spec.n_kv_heads or 1), int(spec.head_dim or 1)
        self.q_proj = nn.Linear(d, q_dim, bias=spec.qkv_bias)
        self.k_proj = nn.Linear(d, kv_dim, bias=spec.qkv_bias)
        self.v_proj = nn.Linear(d, kv_dim, bias=spec.qkv_bias)
        self.o_proj = nn.Linear(q_dim, d, bias=spec.o_bias)

    def _heads(self, t: Tensor, heads: int) -> Tensor:
        """(B, T, heads·d_h) → (B·H, T, d_h); K and V heads are repeated to H for GQA."""
        b, n, _ = t.shape
        t = t.view(b, n, heads, self.head_dim).transpose(1, 2)  # (B, heads, T, d_h)
        groups = self.n_heads // heads
        if groups > 1:
            t = t[:, :, None].expand(b, heads, groups, n, self.head_dim)  # (B, Hkv, g, T, d_h)
        return t.reshape(b * self.n_heads, n, self.head_dim)

    def forward(self, x: Tensor) -> Tensor:
        b, n, _ = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # (B, T, H·d_h), (B, T, Hkv·d_h) ×2
        q = self._heads(q, self.n_heads)  # (B·H, T, d_h)
        k_t = self._heads(k, self.n_kv_heads).transpose(1, 2)  # (B·H, d_h, T)
        v = self._heads(v, self.n_kv_heads)  # (B·H, T, d_h)
        scores = torch.bmm(q, k_t) * (1.0 / math.sqrt(self.head_dim))  # (B·H, T, T)
        probs = torch.softmax(scores, dim=-1)
        context = torch.bmm(probs, v)  # (B·H, T, d_h)
        merged = context.view(b, self.n_heads, n, self.head_dim).transpose(1, 2).reshape(b, n, -1)  # (B, T, H·d_h)
        return self.o_proj(merged)


class TransformerBlock(nn.Module):
    """attn → residual → norm1 → ffn → residual → norm2 (post-norm), or the pre-norm order."""

    def __init__(self, spec: BlockSpec, ffn: FFNModule) -> None:
        super().__init__()
        self.spec = spec
        d = spec.ffn.d_model
        self.attn = SelfAttention(spec.attention)
        self.norm1 = nn.LayerNorm(d, eps=spec.eps) if spec.norm == "layernorm" else RMSNorm(d, spec.eps)
        self.ffn = ffn
        self.norm2 = nn.LayerNorm(d, eps=spec.eps) if spec.norm == "layernorm" else RMSNorm(d, spec.eps)

    def forward(self, x: Tensor) -> Tensor:
        if self.spec.pre_norm:
            x = x + self.attn(self.norm1(x))  # (B, T, d)
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.attn(x))  # (B, T, d)
        return self.norm2(x + self.ffn(x))


def build_block(
    spec: BlockSpec,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | str = torch.float32,
    seed: int = 0,
) -> TransformerBlock:
    """Build the block on `device` in `dtype`; its FFN has exactly build_ffn(spec.ffn, seed=seed)'s weights."""
    if isinstance(dtype, str):
        dtype = resolve_dtype(dtype)
    ffn = build_ffn(spec.ffn, device=device, dtype=dtype, seed=seed)
    torch.manual_seed(seed + 1)
    with torch.device(device):
        block = TransformerBlock(spec, ffn)
    return block.to(device=device, dtype=dtype)
