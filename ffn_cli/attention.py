"""Multi-head (and grouped-query) attention accounting, pure Python: the FFN's neighbour.

Attention holds W_Q, W_K, W_V, W_O; with n_kv_heads < n_heads (GQA) K and V shrink.
The tutorials' check: d_model 512 with biases → 4·(512² + 512) = 1,050,624 parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from ffn_cli.accounting import ParamTensor
from ffn_cli.errors import FFNError
from ffn_cli.spec import MAX_DIM, check_int

__all__ = ["AttentionSpec"]

# The default head width when --n-heads is not given (GPT-2, BERT, LLaMA all use 64 or 128).
DEFAULT_HEAD_DIM = 64


@dataclass(frozen=True)
class AttentionSpec:
    """Shapes of one attention layer. qkv_bias / o_bias split the biases as Qwen2 does
    (q, k, v biased, o not); `bias=True` in the CLI sets both."""

    d_model: int
    n_heads: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    qkv_bias: bool = True
    o_bias: bool = True

    def __post_init__(self) -> None:
        check_int("d_model", self.d_model)
        if self.n_heads is None:
            object.__setattr__(self, "n_heads", max(1, self.d_model // DEFAULT_HEAD_DIM))
        heads = check_int("n_heads", self.n_heads, maximum=MAX_DIM)
        if self.head_dim is None:
            if self.d_model % heads:
                raise FFNError("n_heads", heads, f"must divide d_model ({self.d_model}), or give --head-dim")
            object.__setattr__(self, "head_dim", self.d_model // heads)
        check_int("head_dim", self.head_dim)
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", heads)
        kv = check_int("n_kv_heads", self.n_kv_heads, maximum=MAX_DIM)
        if heads % kv:
            raise FFNError("n_kv_heads", kv, f"must divide n_heads ({heads})")

    @property
    def q_dim(self) -> int:
        return int(self.n_heads) * int(self.head_dim)  # type: ignore[arg-type]

    @property
    def kv_dim(self) -> int:
        return int(self.n_kv_heads) * int(self.head_dim)  # type: ignore[arg-type]

    def tensors(self, prefix: str = "") -> list[ParamTensor]:
        """Named as Hugging Face's LLaMA attention names them."""
        d = self.d_model
        out = []
        for name, rows in (("q_proj", self.q_dim), ("k_proj", self.kv_dim), ("v_proj", self.kv_dim)):
            out.append(ParamTensor(f"{prefix}{name}.weight", (rows, d)))
            if self.qkv_bias:
                out.append(ParamTensor(f"{prefix}{name}.bias", (rows,)))
        out.append(ParamTensor(f"{prefix}o_proj.weight", (d, self.q_dim)))
        if self.o_bias:
            out.append(ParamTensor(f"{prefix}o_proj.bias", (d,)))
        return out

    @property
    def params(self) -> int:
        return sum(t.count for t in self.tensors())

    def projection_flops_per_token(self) -> int:
        """Matmul FLOPs of the four projections for one token."""
        return 2 * self.d_model * (self.q_dim + 2 * self.kv_dim) + 2 * self.q_dim * self.d_model

    def score_flops_per_token(self, seq_len: int) -> int:
        """Q·Kᵀ and softmax(·)·V for one query attending to seq_len keys (no causal saving)."""
        return 2 * 2 * seq_len * self.q_dim

    def flops_per_token(self, seq_len: int) -> int:
        return self.projection_flops_per_token() + self.score_flops_per_token(seq_len)
