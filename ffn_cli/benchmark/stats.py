"""Timing samples → median and quartiles (TimingStats). The median and IQR, never the mean."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["NOISY_REL_IQR", "TimingStats", "summarize"]

NOISY_REL_IQR = 0.10  # IQR/median above this gets a warning


@dataclass(frozen=True)
class TimingStats:
    """The samples of one timed case, in ms, and their order statistics."""

    samples_ms: tuple[float, ...]
    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float

    @property
    def n(self) -> int:
        return len(self.samples_ms)

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms

    @property
    def rel_iqr(self) -> float:
        return self.iqr_ms / self.median_ms if self.median_ms > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.rel_iqr > NOISY_REL_IQR


def summarize(samples_ms: Sequence[float]) -> TimingStats:
    """Median and quartiles (inclusive method: the quartiles of the samples themselves)."""
    data = [float(s) for s in samples_ms]
    if not data:
        raise ValueError("no samples to summarize")
    median = statistics.median(data)
    q1, _, q3 = statistics.quantiles(data, n=4, method="inclusive") if len(data) > 1 else (median, median, median)
    return TimingStats(tuple(data), median, q1, q3, min(data))
