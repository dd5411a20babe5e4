"""DeepSeek-V4's attention, as transformers' DeepseekV4Attention builds it. Pure Python.

One shared key-and-value head (K = V, stored once) of `head_dim`, queries through a low-rank
bottleneck, a grouped low-rank output projection and a sliding window of `window` tokens; in a
compressed layer a compressor also pools every `rate` tokens into one entry of `head_dim` that
the attention reads beside the window: every entry (HCA, Heavily Compressed Attention, rate 128),
or the top `index_topk` a lightning indexer picks from its own pooled keys of `index_dim`
(CSA, Compressed Sparse Attention, rate 4, two series whose windows overlap by one).

What decoding keeps per sequence at context T is what transformers' DeepseekV4HCACache and
DeepseekV4CSACache hold: the window's w − 1 latest tokens × head_dim; ⌊T/m⌋ pooled entries ×
head_dim (the indexer's × index_dim); the T mod m tokens of the window not yet closed, each
with its projected entry and gate (CSA's two series twice as wide, the indexer's alike); and
CSA's overlap, the first series of the last closed window's m tokens, entries and gates, once a
window has closed.

FLOPs per token, at 2 a multiply-add: every Linear weight once (the grouped output projection
too, group by group); the pooling, a softmax-weighted sum of m tokens (CSA: 2·m) into each entry
(2·head_dim a token, CSA 4·head_dim and its indexer 4·index_dim); the scores, 4·heads·head_dim
a key read (Q·Kᵀ and the weighted sum of V = K), the window's keys and the entries read; the
indexer, 2·index_heads·index_dim an entry it scores (every entry a query may see). Elementwise
work (norms, rotary, softmax, the sinks) is left out, as elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ffn_cli.accounting import ParamTensor
from ffn_cli.spec import MAX_DIM, check_int

__all__ = ["CompressedAttentionSpec"]


# DeepSeek-V4's Linear (not ColumnParallelLinear) tensors, by their names as transformers builds them.
_WHOLE_ON_EVERY_GPU = (
    "q_a_proj.",
    "kv_proj.",
    "compressor.kv_proj.",
    "compressor.gate_proj.",
    "compressor (position_bias)",
    "compressor.indexer.kv_proj.",
    "compressor.indexer.gate_proj.",
    "compressor.indexer (position_bias)",
)


def _floor_sum(n: int, m: int) -> int:
    """Σ ⌊s/m⌋ for s = 1 … n."""
    q, r = divmod(n, m)
    return m * q * (q - 1) // 2 + q * (r + 1)


@dataclass(frozen=True)
class CompressedAttentionSpec:
    """One layer kind of DeepSeek-V4's attention: its tensors as built, its window, and its
    compressor (`rate` 0: the window alone) with the indexer a CSA layer runs."""

    d_model: int
    n_heads: int
    head_dim: int
    window: int
    built: tuple[ParamTensor, ...]
    rate: int = 0
    overlap: bool = False  # CSA: two series, each window pooled with the first series of the one before
    index_heads: int = 0
    index_dim: int = 0
    index_topk: int = 0

    def __post_init__(self) -> None:
        check_int("hidden_size", self.d_model)
        check_int("num_attention_heads", self.n_heads, maximum=MAX_DIM)
        check_int("head_dim", self.head_dim)
        check_int("sliding_window", self.window)
        for key, value in (("compress_rate", self.rate), ("index_n_heads", self.index_heads), ("index_head_dim", self.index_dim)):
            check_int(key, value, minimum=0)
        check_int("index_topk", self.index_topk, minimum=0)

    # The names the rest of the accounting reads from any attention: one KV head, K = V.
    @property
    def heads(self) -> int:
        return self.n_heads

    @property
    def n_kv_heads(self) -> int:
        return 1

    @property
    def kv_heads(self) -> int:
        return 1

    @property
    def qkv_bias(self) -> bool:
        return False

    @property
    def o_bias(self) -> bool:
        return False

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.head_dim

    @property
    def v_dim(self) -> int:
        return 0  # the values are the keys, held once

    @property
    def o_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kind(self) -> str:
        return "CSA" if self.index_heads else "HCA" if self.rate else "SWA"

    @staticmethod
    def is_compressor(name: str) -> bool:
        """Whether a tensor of the layer is its compressor's (and the indexer's within it)."""
        return name.startswith("compressor")

    @staticmethod
    def whole_on_every_gpu(name: str) -> bool:
        """Whether --tp keeps a tensor of the layer whole on every GPU, as DeepSeek's reference
        inference does: the query's projection down to its latent, and each projection to one
        shared head (the key-and-value head, the compressor's entries and gates, the indexer's)
        and the compressor's position biases. The query's projection up to the heads, the
        output's and the indexer's heads split by head."""
        return name.startswith(_WHOLE_ON_EVERY_GPU)

    def window_alone(self) -> CompressedAttentionSpec:
        """The layer without its compressor: a layer of the window alone (compress ratio 0), as
        DeepSeek-V4's MTP block attends."""
        built = tuple(t for t in self.built if not self.is_compressor(t.name))
        return replace(self, built=built, rate=0, overlap=False, index_heads=0, index_dim=0, index_topk=0)

    def tensors(self, prefix: str = "") -> list[ParamTensor]:
        return [ParamTensor(f"{prefix}{t.name}", t.shape) for t in self.built]

    @property
    def params(self) -> int:
        return sum(t.count for t in self.built)

    def pooling_flops_per_token(self) -> int:
        """The compressor's (and the indexer's) softmax-weighted sums, per source token."""
        if not self.rate:
            return 0
        series = 2 if self.overlap else 1
        return 2 * series * self.head_dim + (4 * self.index_dim if self.index_heads else 0)

    def projection_flops_per_token(self) -> int:
        """Every Linear weight once a token (the built tensors named .weight are the Linears'),
        and the pooling."""
        return 2 * sum(t.count for t in self.built if t.name.endswith(".weight")) + self.pooling_flops_per_token()

    # --- what one query reads -------------------------------------------------------------

    def entries(self, seen: int) -> int:
        """The pooled entries a query that has seen `seen` tokens (itself included) may read."""
        return seen // self.rate if self.rate else 0

    def keys_read(self, seen: int) -> int:
        """The window's keys and the entries a query reads: all of them, or the indexer's top-k."""
        entries = self.entries(seen)
        return min(seen, self.window) + (min(entries, self.index_topk) if self.index_topk else entries)

    def score_flops(self, seen: int) -> int:
        """One query's scores: the keys it reads, and the indexer's over every entry it may read."""
        return 4 * self.n_heads * self.head_dim * self.keys_read(seen) + 2 * self.index_heads * self.index_dim * self.entries(seen)

    def score_flops_sum(self, length: int) -> int:
        """Σ score_flops(s) for s = 1 … length: a causal sequence's queries, in closed form."""
        w = self.window
        window = length * (length + 1) // 2 if length <= w else w * (w + 1) // 2 + (length - w) * w
        entries = _floor_sum(length, self.rate) if self.rate else 0
        read = entries
        if self.rate and self.index_topk:  # ⌊s/m⌋ reaches the top-k at s = k·m: k from there on
            last = self.index_topk * self.rate - 1
            read = entries if length <= last else _floor_sum(last, self.rate) + self.index_topk * (length - last)
        return 4 * self.n_heads * self.head_dim * (window + read) + 2 * self.index_heads * self.index_dim * entries

    def score_flops_per_token(self, seq_len: int) -> int:
        """A query that sees seq_len tokens (no causal saving)."""
        return self.score_flops(seq_len)

    def flops_per_token(self, seq_len: int) -> int:
        return self.projection_flops_per_token() + self.score_flops_per_token(seq_len)

    # --- what decoding keeps ----------------------------------------------------------------

    def cached_elements(self, context: int) -> int:
        """Elements one sequence's cache holds at `context` tokens: the window, the entries, the
        window not yet closed with its gates, and CSA's overlap."""
        sliding = min(context, self.window - 1) * self.head_dim
        if not self.rate:
            return sliding
        closed, pending = divmod(context, self.rate)
        series = 2 if self.overlap else 1
        overlap = 2 * self.rate if closed else 0  # the last closed window's first series: its m tokens' entries and gates
        kept = closed * self.head_dim + 2 * pending * series * self.head_dim + (overlap * self.head_dim if self.overlap else 0)
        if self.index_heads:
            kept += closed * self.index_dim + 2 * pending * 2 * self.index_dim + overlap * self.index_dim
        return sliding + kept

    def peak_elements(self, context: int) -> int:
        """The most one sequence's cache holds on the way to `context` tokens: decoding passes
        through every shorter context, and the cache shrinks as a window closes (its buffered
        tokens pooled into one entry), so the peak is at `context` or just before the last close."""
        if not self.rate or context < self.rate:
            return self.cached_elements(context)
        before_close = context // self.rate * self.rate - 1
        return max(self.cached_elements(context), self.cached_elements(before_close))

    def shape_data(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sliding_window": self.window,
            "compress_rate": self.rate or None,
            "index_n_heads": self.index_heads or None,
            "index_head_dim": self.index_dim or None,
            "index_topk": self.index_topk or None,
        }
