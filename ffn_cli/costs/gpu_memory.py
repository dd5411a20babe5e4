"""Does a deployment fit: one GPU's bytes under a layout, at a phase, batch and context, against
what the driver says the GPU holds, and the largest batch and longest context that still fit.

Counted per GPU: the weights as stored (costs/rank_memory.py); the KV cache of the sequences
this GPU's attention holds at the context (sliding windows and chunks capped as decoding keeps
them, costs/decode_state.py), of its share of the KV heads (costs/parallel_layout.py), and a
hybrid's recurrent state, split over tp; the pass's activations: its tokens × (the layer's
input and residual, 2·d_model, plus its widest intermediate on this GPU), and one float32 row
of logits per sequence (a serving engine samples from the last position alone); and the runtime
reserve (hardware/reserve.py, measured, with its source). An encoder keeps no cache. Not
counted: CUDA graphs, the allocator's fragmentation beyond the reserve, a paged cache's last
partly filled block. Pure Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import ceil

from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.costs.decode_state import KindState, decode_state
from ffn_cli.costs.parallel_layout import Layout, intermediate_width
from ffn_cli.costs.rank_memory import RankMemory
from ffn_cli.hardware.gpus import GPU
from ffn_cli.hardware.reserve import RuntimeReserve, runtime_reserve
from ffn_cli.models.spec import ModelSpec

__all__ = ["GPUMemory", "MemoryCase", "gpu_memory"]

LOGIT_BYTES = 4  # logits in float32, as samplers take them
SEARCH_LIMIT = 1 << 30  # the most sequences or tokens the searches try


@dataclass(frozen=True)
class MemoryCase:
    """What the GPU runs: `batch` sequences of `context` tokens, in prefill or decode."""

    phase: str
    batch: int
    context: int
    act_bytes: int


@dataclass(frozen=True)
class GPUMemory:
    ranks: RankMemory
    gpu: GPU
    layout: Layout
    case: MemoryCase
    kv_cache_bytes: int
    activation_bytes: int
    reserve: RuntimeReserve
    max_batch: int  # at this context (0: not even one sequence fits)
    max_context: int  # at this batch (0: not even one token fits)
    context_limit: int | None  # the longest context the model takes (None: its config names none)
    residual_copies: int = 1  # copies of the hidden state on the residual stream (DeepSeek-V4's hyper-connections)
    attends: bool = True  # False: no layer attends (Mamba, xLSTM, RWKV), the cache a fixed state a sequence
    # A compressed layer's cache shrinks as a window closes (DeepSeek-V4's): the KV cache counted is
    # the most it holds on the way to the context, a little above what it holds there.
    peaks: bool = False
    # A mixer over the residual stream's channels (Inkling's short convolutions): its state whole on each GPU.
    whole_mixer: bool = False

    @property
    def total_bytes(self) -> int:
        return self.ranks.per_gpu_bytes + self.kv_cache_bytes + self.activation_bytes + self.reserve.bytes_

    @property
    def past_limit(self) -> bool:
        """The context asked is past the model's limit: no layout runs this pass."""
        return self.context_limit is not None and self.case.context > self.context_limit

    @property
    def capacity_bytes(self) -> int:
        return self.gpu.memory_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes

    @property
    def free_bytes(self) -> int:
        return self.capacity_bytes - self.total_bytes


class _Sizer:
    """KV cache and activation bytes on one GPU for any batch and context (the searches' one path)."""

    def __init__(
        self,
        spec: ModelSpec,
        windows: Sequence[int | None],
        chunks: Sequence[int | None],
        layout: Layout,
        phase: str,
        causal: bool,
        mtp: int,
    ) -> None:
        self.spec, self.windows, self.chunks, self.layout, self.phase, self.mtp = spec, windows, chunks, layout, phase, mtp
        self.causal = causal  # an encoder (BERT) attends to the whole input at once and caches nothing
        # a layer's input and output on the residual stream (each of its copies), and its widest intermediate
        self.width = 2 * spec.residual_copies * spec.d_model + intermediate_width(spec, layout)

    def kv_bytes_per_sequence(self, context: int, act_bytes: int) -> float:
        if not self.causal:
            return 0.0
        # decoding passes every shorter context: the most each kind holds on the way
        kinds = decode_state(self.spec, self.windows, self.chunks, context, peak=True, mtp=self.mtp)
        return sum(k.bytes_(act_bytes) * self._share(k) for k in kinds)

    def _share(self, kind: KindState) -> float:
        """The fraction of a kind's state one GPU keeps: its KV heads' share, a mixer's state split
        over --tp, or all of it (MLA's latent, a convolution over the residual stream)."""
        if kind.tokens is not None or kind.kv_heads:
            return self.layout.kv_heads_share(kind.kv_heads)
        return 1.0 if kind.whole else 1 / self.layout.tp

    def kv_bytes(self, batch: int, context: int, act_bytes: int) -> int:
        return ceil(self.layout.sequences(batch) * self.kv_bytes_per_sequence(context, act_bytes))

    def activation_bytes(self, batch: int, context: int, act_bytes: int) -> int:
        sequences = self.layout.sequences(batch)
        tokens = sequences * context if self.phase == "prefill" else sequences
        logits = sequences * ceil(self.spec.head_rows / self.layout.tp) * LOGIT_BYTES
        return ceil(tokens * self.width * act_bytes) + logits


def _largest(fits: Callable[[int], bool], limit: int) -> int:
    """The largest n in 1..limit with fits(n), fits being monotone (0 when none)."""
    if not fits(1):
        return 0
    low, high = 1, 2
    while high <= limit and fits(high):
        low, high = high, high * 2
    high = min(high, limit + 1)
    while high - low > 1:  # fits(low), not fits(high) (or high past the limit)
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


def gpu_memory(
    spec: ModelSpec,
    ranks: RankMemory,
    windows: Sequence[int | None],
    chunks: Sequence[int | None],
    gpu: GPU,
    layout: Layout,
    case: MemoryCase,
    context_limit: int | None = None,
    *,
    causal: bool = True,
    mtp: int = 0,
) -> GPUMemory:
    """One GPU's bytes for `case`, and the largest batch (at its context) and longest context
    (at its batch, up to `context_limit`, the model's max_position_embeddings) that fit; the
    cache of the `mtp` multi-token-prediction layers a speculative decoder runs counted too."""
    sizer = _Sizer(spec, windows, chunks, layout, case.phase, causal, mtp)
    reserve = runtime_reserve(layout.gpus, gpu.runtime)
    fixed = ranks.per_gpu_bytes + reserve.bytes_
    b = case.act_bytes

    def total(batch: int, context: int) -> int:
        return fixed + sizer.kv_bytes(batch, context, b) + sizer.activation_bytes(batch, context, b)

    limit = context_limit or SEARCH_LIMIT
    return GPUMemory(
        ranks,
        gpu,
        layout,
        case,
        sizer.kv_bytes(case.batch, case.context, b),
        sizer.activation_bytes(case.batch, case.context, b),
        reserve,
        _largest(lambda n: total(n, case.context) <= gpu.memory_bytes, SEARCH_LIMIT),
        _largest(lambda n: total(case.batch, n) <= gpu.memory_bytes, limit),
        context_limit,
        spec.residual_copies,
        bool(spec.attention_layers),
        any(isinstance(spec.attention_of(i), CompressedAttentionSpec) for i in spec.attention_layers),
        spec.mixer is not None and spec.mixer.whole_on_each_gpu,
    )
