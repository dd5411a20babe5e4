"""FFN against attention FLOPs as the context grows.

The parameter ratio of FFN to attention is fixed; the FLOPs ratio is not. Per token, the FFN
and the four attention projections cost the same at any length, but the scores (Q·Kᵀ, then
softmax(·)·V) grow with the keys each query reads: (L + 1)/2 on average under a causal mask,
L for an encoder, at most w under a sliding window of w. A hybrid's mixer layers read no keys:
their convolution and state update cost a few FLOPs per token whatever the length (the chunked
form's last chunk padded, models/mixers.py). All counts are forward matmul FLOPs (2·m·n·k),
summed over the layers; embeddings and the LM head are left out. Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ffn_cli.accounting import matmul_flops_per_token
from ffn_cli.attention import AnyAttention, LatentAttentionSpec
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.layer import compressed_summary
from ffn_cli.spec import FFNSpec, check_int

# Types only: one FFN's FLOPs over length (`ffn params --variant`) load no model spec.
if TYPE_CHECKING:
    from ffn_cli.models.mixers import LinearMixer
    from ffn_cli.models.spec import ModelSpec

__all__ = ["MAX_SEQ_LEN", "FlopsAtLength", "LayerStack", "OverLengths", "flops_over_length", "mean_keys", "model_stack", "single_layer"]

# Beyond any published context; a crossover further out than this is reported as none.
MAX_SEQ_LEN = 1 << 30


@dataclass(frozen=True)
class LayerStack:
    """What the FLOPs depend on: per-token FFN and projection FLOPs of all layers, and for each
    layer its score FLOPs per query per key read and its window."""

    ffn_flops: int
    projection_flops: int
    score_flops_per_key: tuple[int, ...]  # one per layer
    windows: tuple[int | None, ...]  # one per layer
    causal: bool = True
    attention_kind: str = "MHA"
    attention_detail: str = ""  # the widths the scores run over, in words
    chunks: tuple[int | None, ...] = ()  # one per layer where attention runs in chunks (Llama 4)
    # A hybrid's layers that mix tokens without attention: their kind (Gated DeltaNet), or None
    # per attention layer; with their projection FLOPs of all such layers together.
    mixers: tuple[str | None, ...] = ()
    mixer_projection_flops: int = 0
    # True for each layer that is an FFN alone, no token mixer (Nemotron-H's MLP and MoE blocks).
    ffn_only: tuple[bool, ...] = ()
    # The mixer of the layers `mixers` names: its convolution and state update per token.
    mixer: LinearMixer | None = None
    # A family's own tensors beside attention and FFN (ExtraPart names: Gemma 3n's AltUp), not counted here.
    left_out: tuple[str, ...] = ()
    # How many of the mixer's layers attend too, side by side with it (Falcon-H1's every one, Zamba's hybrid layers).
    attending_mixer_layers: int = 0
    # DeepSeek Sparse Attention: each layer's indexer score FLOPs per key (it reads every key;
    # 0 where none runs), and the keys each query's attention then reads (0: every key).
    index_flops_per_key: tuple[int, ...] = ()
    sparse_topk: int = 0
    # True for each attention layer that reads every key beside the indexed ones (MiniMax-M3's first three).
    full_read: tuple[bool, ...] = ()
    # DeepSeek-V4's compressed attention, per layer (None elsewhere): its window, the entries each
    # query reads and its indexer's scores, counted by the spec itself (its score_flops_per_key is 0).
    compressed: tuple[CompressedAttentionSpec | None, ...] = ()

    def mixer_flops(self, seq_len: int | None) -> Fraction:
        """Per-token FLOPs of every mixer layer beyond its projections: convolution and state
        update; None: at the rate of whole chunks."""
        if self.mixer is None:
            return Fraction(0)
        return sum(m is not None for m in self.mixers) * Fraction(self.mixer.sequence_flops(seq_len))

    def score_flops(self, seq_len: int) -> Fraction:
        """Per-token score FLOPs at seq_len: every layer's keys read by all queries, over L."""
        total = 0
        chunks = self.chunks or (None,) * len(self.windows)
        indexers = self.index_flops_per_key or (0,) * len(self.windows)
        whole = self.full_read or (False,) * len(self.windows)
        for per_key, window, chunk, index, full in zip(self.score_flops_per_key, self.windows, chunks, indexers, whole, strict=True):
            keys, _ = mean_keys(seq_len, window, causal=self.causal, chunk=chunk)
            read = keys
            if self.sparse_topk and per_key and not full:  # a query's top-k, counted as a window of that width counts
                read, _ = mean_keys(seq_len, min(window or self.sparse_topk, self.sparse_topk), causal=self.causal, chunk=chunk)
            total += per_key * read + index * keys
        total += sum(c.score_flops_sum(seq_len) for c in self.compressed if c is not None)
        return Fraction(total, seq_len)

    def attention_flops(self, seq_len: int, *, padded: bool = True) -> Fraction:
        """Every token mixer's FLOPs per token: projections, scores, and the mixers' state
        updates (without `padded`, at their rate over whole chunks)."""
        return self.projection_flops + self.score_flops(seq_len) + self.mixer_flops(seq_len if padded else None)

    def crossover(self) -> int | None:
        """The shortest sequence at which attention's FLOPs per token reach the FFN's, or None
        when they never do (windows cap the scores, or it lies past MAX_SEQ_LEN). A chunked
        mixer counts at its rate over whole chunks: its padded last chunk, a cost per token
        that falls as 1/L, would make a few tokens look dearer than thousands."""
        if self.attention_flops(MAX_SEQ_LEN, padded=False) < self.ffn_flops:
            return None
        low, high = 1, MAX_SEQ_LEN  # without the padding, attention_flops is non-decreasing in the length
        while low < high:
            mid = (low + high) // 2
            if self.attention_flops(mid, padded=False) >= self.ffn_flops:
                high = mid
            else:
                low = mid + 1
        return low


@dataclass(frozen=True)
class FlopsAtLength:
    """Per-token forward matmul FLOPs at one sequence length."""

    seq_len: int
    ffn: int
    projections: int
    scores: Fraction
    mixer: Fraction = Fraction(0)  # a hybrid's mixer layers: convolution and state update

    @property
    def attention(self) -> Fraction:
        return self.projections + self.scores + self.mixer

    @property
    def ffn_share(self) -> float:
        """The FFN's share of the layer's (attention + FFN) FLOPs."""
        return float(self.ffn / (self.ffn + self.attention))

    def data(self) -> dict[str, Any]:
        return {
            "seq_len": self.seq_len,
            "ffn_flops": self.ffn,
            "attention_projection_flops": self.projections,
            "attention_score_flops": float(self.scores),
            "mixer_state_flops": float(self.mixer),
            "ffn_share": self.ffn_share,
            "ffn_attention_ratio": float(self.ffn / self.attention),
        }


# One stack's FLOPs at each asked length: what `ffn params --seq-len` prints and puts in --json.
OverLengths = tuple[LayerStack, tuple[FlopsAtLength, ...]]


def _per_key(attention: AnyAttention) -> int:
    """Score FLOPs of one query against one key: Q·Kᵀ over the q/k head width and the weighted
    sum of V over the v head width, 2 FLOPs a multiply-add, every head."""
    return attention.score_flops_per_token(1)


def _detail(a: AnyAttention) -> Message:
    if isinstance(a, LatentAttentionSpec):
        return Message(
            N_("{heads} heads, Q·Kᵀ over {qk} ({nope} + {rope} rotary), V over {v}, the latent kv expanded"),
            heads=a.n_heads,
            qk=a.qk_head_dim,
            nope=a.qk_nope_head_dim,
            rope=a.qk_rope_head_dim,
            v=a.v_head_dim,
        )
    if isinstance(a, CompressedAttentionSpec):
        return compressed_summary(a)
    return Message(N_("{heads} query heads × {dim}"), heads=a.n_heads, dim=a.head_dim)


def single_layer(ffn: FFNSpec, attention: AnyAttention) -> LayerStack:
    """One decoder layer: the FFN beside its attention, causal, no window."""
    flops = matmul_flops_per_token(ffn)
    return LayerStack(
        flops, attention.projection_flops_per_token(), (_per_key(attention),), (None,), True, attention.kind, _detail(attention)
    )


def model_stack(spec: ModelSpec, windows: Sequence[int | None], *, causal: bool, chunks: Sequence[int | None] = ()) -> LayerStack:
    """Every layer of a model: its dense or MoE FFN (active experts only), its attention."""
    if len(windows) != spec.n_layers or len(chunks) not in (0, spec.n_layers):
        raise FFNError("windows", len(windows), _("one per layer ({n_layers})").format(n_layers=spec.n_layers))
    ffn = 0
    for i in spec.ffn_layers:
        layer_ffn = spec.ffn_of(i)
        assert layer_ffn is not None
        ffn += spec.ffn_matmul_flops(layer_ffn)
    a = spec.attention
    # Attention of several shapes (Gemma 4's sliding and full layers): each said, in layer order.
    kinds = list(dict.fromkeys(attention for attention, _extra, layers in spec.attention_groups if layers)) or [a]
    detail = _detail(a) if len(kinds) == 1 else Message.separated([_detail(k) for k in kinds])
    # A layer without attention reads no keys: a mixer's, and one that is an FFN alone.
    mixed = set(spec.mixer.layers) if spec.mixer is not None else set()
    unmixed = set(spec.no_mixer_layers)
    keyless = (mixed - set(spec.attention_layers)) | unmixed  # Falcon-H1's mixer layers attend too
    mixer_flops = len(mixed) * spec.mixer.projection_flops if spec.mixer is not None else 0
    compressed = tuple(a if isinstance(a := spec.attention_of(i), CompressedAttentionSpec) and i not in keyless else None
                       for i in range(spec.n_layers))  # fmt: skip
    keyless |= {i for i, c in enumerate(compressed) if c is not None}  # their keys counted by their spec
    return LayerStack(
        ffn,
        spec.attention_flops + mixer_flops,
        tuple(0 if i in keyless else _per_key(spec.attention_of(i)) for i in range(spec.n_layers)),
        tuple(None if i in keyless else w for i, w in enumerate(windows)),
        causal,
        "/".join(dict.fromkeys(k.kind for k in kinds)),
        detail,
        tuple(None if i in keyless else c for i, c in enumerate(chunks)),
        tuple(spec.mixer_label(i) if i in mixed else None for i in range(spec.n_layers)) if mixed else (),
        mixer_flops,
        tuple(i in unmixed for i in range(spec.n_layers)) if unmixed else (),
        spec.mixer,
        tuple(e.name for e in spec.extras if e.flops),
        len(spec.beside_attention),
        tuple(spec.index_flops_per_key if i in spec.index_layers else 0 for i in range(spec.n_layers)) if spec.index_layers else (),
        spec.sparse_topk,
        tuple(i in spec.full_read_layers for i in range(spec.n_layers)) if spec.full_read_layers else (),
        compressed if any(c is not None for c in compressed) else (),
    )


def flops_over_length(stack: LayerStack, seq_lens: Sequence[int]) -> tuple[FlopsAtLength, ...]:
    rows = []
    for seq_len in seq_lens:
        check_int("seq_len", seq_len, maximum=MAX_SEQ_LEN)
        rows.append(FlopsAtLength(seq_len, stack.ffn_flops, stack.projection_flops, stack.score_flops(seq_len), stack.mixer_flops(seq_len)))
    return tuple(rows)


def mean_keys(seq_len: int, window: int | None, *, causal: bool = True, chunk: int | None = None) -> tuple[int, int]:
    """(keys read by all seq_len queries together, seq_len): their ratio is the mean per query.

    Causal: query i (from 0) reads min(i + 1, window) keys, so a full layer reads
    L·(L + 1)/2 in all, (L + 1)/2 on average; in chunks of c, (i mod c) + 1;
    bidirectional: L each, L² in all.
    """
    if chunk is not None and causal:
        full, rest = divmod(seq_len, chunk)
        return full * chunk * (chunk + 1) // 2 + rest * (rest + 1) // 2, seq_len
    if not causal:
        w = seq_len if window is None else min(window, seq_len)
        return seq_len * w, seq_len
    if window is None or seq_len <= window:
        return seq_len * (seq_len + 1) // 2, seq_len
    return window * (window + 1) // 2 + (seq_len - window) * window, seq_len
