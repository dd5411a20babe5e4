"""The roofline: a lower bound on time from FLOPs, bytes moved, a peak rate and a bandwidth.

time ≥ max(FLOPs / peak, bytes / bandwidth). It is a bound, not a forecast: real kernels reach
neither ceiling (launch overheads, imperfect overlap and partial waves cost more). The
arithmetic intensity FLOPs / bytes against the ridge point peak / bandwidth says which
ceiling binds: below the ridge the run is memory-bound, at or above it compute-bound.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Roofline", "busiest_rank_experts", "expected_distinct_experts"]


@dataclass(frozen=True)
class Roofline:
    flops: float
    bytes_: float
    peak_tflops: float
    bandwidth_gbps: float

    @property
    def intensity(self) -> float:
        """FLOP per byte moved."""
        return self.flops / self.bytes_ if self.bytes_ else float("inf")

    @property
    def ridge(self) -> float:
        return self.peak_tflops * 1e12 / (self.bandwidth_gbps * 1e9)

    @property
    def compute_s(self) -> float:
        return self.flops / (self.peak_tflops * 1e12)

    @property
    def memory_s(self) -> float:
        return self.bytes_ / (self.bandwidth_gbps * 1e9)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"

    @property
    def time_s(self) -> float:
        """The lower bound on the time of the pass: no run on this device can be faster."""
        return max(self.compute_s, self.memory_s)


def expected_distinct_experts(experts: int, top_k: float, tokens: int) -> float:
    """Experts touched by `tokens` tokens each routed to `top_k` of `experts`, in expectation,
    under uniform routing: each expert is missed by one token with probability 1 − k/E, by
    all of them with (1 − k/E)^T, so E·(1 − (1 − k/E)^T) are touched. Real routers are not
    uniform: they touch fewer (popular experts repeat). With zero-computation experts in the
    pool, k is the real picks a token makes on average, k · E / (E + Z): a fraction is fine."""
    if not 0 < top_k <= experts or tokens < 0:
        raise ValueError(f"need 0 < top_k ≤ experts and tokens ≥ 0, got k={top_k}, E={experts}, T={tokens}")
    return experts * (1 - (1 - top_k / experts) ** tokens)


def busiest_rank_experts(experts: int, top_k: float, tokens: int, ranks: int) -> float:
    """The experts the busiest of `ranks` expert-parallel ranks touches, in expectation, each
    rank holding experts / ranks of them, under uniform routing: each expert is touched with
    p = 1 − (1 − k/E)^T, a rank's count taken as Binomial(E / ranks, p) independently of the
    others', and E[max] = Σ_j (1 − F(j)^ranks) over j < E / ranks. One rank: the mean itself."""
    if ranks == 1:
        return expected_distinct_experts(experts, top_k, tokens)
    if experts % ranks:
        raise ValueError(f"{ranks} ranks must divide {experts} experts")
    held = experts // ranks
    p = 1 - (1 - top_k / experts) ** tokens
    cdf, pmf = 0.0, (1 - p) ** held
    expected = 0.0
    for j in range(held):
        cdf += pmf
        expected += 1 - min(cdf, 1.0) ** ranks
        pmf = pmf * (held - j) / (j + 1) * (p / (1 - p)) if p < 1 else 0.0
    return expected
