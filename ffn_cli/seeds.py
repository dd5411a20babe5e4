"""One `--seed`, one independent random stream per purpose.

Weights, the input, dL/dy, an MSE target, dropout masks, the block's attention weights and the
sparse FFN's mask each draw from a seed of their own, derived from the user's seed and the purpose by
NumPy's `SeedSequence` (a hash of both, so the streams are independent, not offset copies). Drawing
the input and the weights from one stream correlates every token with a weight row, which
skews every statistic the trace prints.
"""

from __future__ import annotations

import enum

import numpy as np

__all__ = ["Stream", "stream_seed"]

_SEED_BITS = 63  # torch.Generator.manual_seed takes any non-negative int below 2**64; 63 bits keep it an int64 too


class Stream(enum.IntEnum):
    """What a random draw is for; the value is hashed with the seed, so it is fixed forever."""

    WEIGHTS = 0
    INPUT = 1
    OUTPUT_GRAD = 2
    TARGET = 3
    DROPOUT = 4
    ATTENTION_WEIGHTS = 5
    MASK = 6


def stream_seed(seed: int, stream: Stream) -> int:
    """The seed of `stream` under the user's `seed`: the same on every machine and torch release."""
    words = np.random.SeedSequence((seed, int(stream))).generate_state(2, dtype=np.uint32)
    return (int(words[0]) | (int(words[1]) << 32)) & ((1 << _SEED_BITS) - 1)
