"""The FFN in its Transformer block: attention → residual → norm → FFN → residual → norm.

Post-norm, as the original Transformer and the tutorial's encoder layer, by default; pre-norm
(`x + f(norm(x))`, GPT-2 and LLaMA) and RMSNorm as options. Attention is bidirectional (an
encoder layer, no causal mask), any kind `attention_modules` builds: grouped-query heads with
q/k norms and sinks, or multi-head latent attention. Every forward uses functional ops, so the
trace recorder sees each step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ffn_cli.accounting import ParamTensor, total_params
from ffn_cli.attention import BLOCK_NORMS, AnyAttention, AttentionSpec, LatentAttentionSpec
from ffn_cli.attention_modules import LatentAttention, RMSNorm, SelfAttention, build_attention
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.modules import FFNModule, build_ffn, resolve_dtype
from ffn_cli.regions import NamedSteps, StepNaming
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import FFNSpec

__all__ = ["NORMS", "BlockSpec", "LatentAttention", "RMSNorm", "SelfAttention", "TransformerBlock", "build_block"]

NORMS = BLOCK_NORMS


@dataclass(frozen=True)
class BlockSpec:
    """One Transformer block around `ffn`; attention biases follow the FFN's bias setting."""

    ffn: FFNSpec
    attention: AnyAttention
    norm: str = "layernorm"
    pre_norm: bool = False
    eps: float = 1e-5

    def __post_init__(self) -> None:
        if self.norm not in NORMS:
            raise FFNError("norm", self.norm, _("choose one of {norms}").format(norms=", ".join(NORMS)))
        if self.attention.d_model != self.ffn.d_model:
            raise FFNError(
                "d_model", self.attention.d_model, _("attention and FFN must share d_model ({d_model})").format(d_model=self.ffn.d_model)
            )

    @classmethod
    def around(
        cls,
        ffn: FFNSpec,
        *,
        n_heads: int | None = None,
        n_kv_heads: int | None = None,
        head_dim: int | None = None,
        norm: str = "layernorm",
        pre_norm: bool = False,
    ) -> BlockSpec:
        bias = bool(ffn.bias)
        attention = AttentionSpec(ffn.d_model, n_heads, n_kv_heads, head_dim, qkv_bias=bias, o_bias=bias)
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
        return {
            "n_heads": a.n_heads,
            "n_kv_heads": a.n_kv_heads,
            "head_dim": a.head_dim,
            "norm": self.norm,
            "pre_norm": self.pre_norm,
            "attention": a.shape_data(),
        }

    def describe(self) -> Message:
        """'8 heads of 64, 2 K/V heads (GQA), post-norm LayerNorm': the block in words."""
        kind = "LayerNorm" if self.norm == "layernorm" else "RMSNorm"
        norm = N_(", pre-norm {norm}") if self.pre_norm else N_(", post-norm {norm}")
        return _attention_words(self.attention) + Message.of(norm, norm=kind)


def _attention_words(a: AnyAttention) -> Message:
    if isinstance(a, LatentAttentionSpec):
        head = f"{a.qk_nope_head_dim}+{a.qk_rope_head_dim}"
        words = Message.of(N_("MLA, {heads} heads of {head} (v {v}), "), heads=a.n_heads, head=head, v=a.v_head_dim)
        if a.q_lora_rank is not None:
            words += Message.of(N_("q rank {rank:,}, "), rank=a.q_lora_rank)
        return words + Message.of(N_("kv rank {rank:,}"), rank=a.kv_lora_rank)
    if isinstance(a, CompressedAttentionSpec):
        return Message.of(N_("{kind}, {heads} heads of {dim}, K = V"), kind=a.kind, heads=a.n_heads, dim=a.head_dim)
    words = Message.of(N_("{heads} heads of {dim}"), heads=a.n_heads, dim=a.head_dim)
    if a.n_kv_heads != a.n_heads:
        words += Message.of(N_(", {heads} K/V heads (GQA)"), heads=a.n_kv_heads)
    if a.qk_norm != "none":
        norm = "LayerNorm" if a.qk_norm_bias else "RMSNorm"
        where = N_(", q/k {norm} per head") if a.qk_norm == "head" else N_(", q/k {norm} over the projections")
        words += Message.of(where, norm=norm)
    return words + (Message.of(N_(", a sink logit per head")) if a.sinks else Message())


class TransformerBlock(nn.Module, NamedSteps):
    """attn → residual → norm1 → ffn → residual → norm2 (post-norm), or the pre-norm order."""

    step_naming = StepNaming.BLOCK

    def __init__(self, spec: BlockSpec, ffn: FFNModule) -> None:
        super().__init__()
        self.spec = spec
        d = spec.ffn.d_model
        self.attn = build_attention(spec.attention, spec.eps)
        self.norm1 = nn.LayerNorm(d, eps=spec.eps) if spec.norm == "layernorm" else RMSNorm(d, spec.eps)
        self.ffn = ffn
        self.norm2 = nn.LayerNorm(d, eps=spec.eps) if spec.norm == "layernorm" else RMSNorm(d, spec.eps)

    def registry_ffn(self) -> FFNModule:
        """The FFN of the registry this block runs (what the NumPy reference checks): its `ffn`."""
        return self.ffn

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
    torch.manual_seed(stream_seed(seed, Stream.ATTENTION_WEIGHTS))
    with torch.device(device):
        block = TransformerBlock(spec, ffn)
    return block.to(device=device, dtype=dtype)
