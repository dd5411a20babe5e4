"""A forecast of one forward's time from a measured profile: its GEMMs priced by interpolating
the profile's shape grid, its elementwise passes by the profile's times for the same op at
nearby sizes, plus the fixed cost of one call. Pure Python: the profile is data.

A GEMM's time is interpolated trilinearly in (M, N, K) between the grid's neighbours: along each
axis a product's time is close to affine, a fixed part (the call, reading the operand the axis
does not grow) and a part per row or column, where its rate is not (interpolating the rate in
log space ran about 10 % high between a CPU's grid points). At a grid point it is that point's
measured time exactly; beyond the grid's edge the edge's rate holds (a larger product runs at
the rate of the largest measured, the time growing with its FLOPs). An elementwise op's time is
interpolated linearly in (log elements, log seconds), beyond the largest size at that size's
bandwidth, below the smallest at the smallest's time (the call's own cost then dominates).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ffn_cli.hardware.profile import DeviceProfile, ElementwisePoint, GemmPoint

__all__ = ["ElementwisePass", "Gemm", "Prediction", "elementwise_seconds", "gemm_seconds", "predict"]


@dataclass(frozen=True)
class Gemm:
    """(M, K) @ (K, N)ᵀ, as nn.Linear runs it: M tokens, K in, N out."""

    name: str
    m: int
    n: int
    k: int


@dataclass(frozen=True)
class ElementwisePass:
    """One elementwise op (a name the profile measured: relu, silu, mul, add, …) over `elements` outputs."""

    name: str
    op: str
    elements: int


@dataclass(frozen=True)
class Prediction:
    """The forecast and its parts, in seconds."""

    gemm_s: float
    elementwise_s: float
    fixed_s: float
    parts: tuple[tuple[str, float], ...]

    @property
    def seconds(self) -> float:
        return self.gemm_s + self.elementwise_s + self.fixed_s


def _bracket(axis: Sequence[int], x: float) -> tuple[int, int, float]:
    """Indices below and above x on a sorted axis, and x's position between them (0 at the
    lower, 1 at the upper); x is within the axis's ends."""
    hi = bisect.bisect_left(axis, x)
    if axis[hi] == x:
        return hi, hi, 0.0
    lo = hi - 1
    return lo, hi, (x - axis[lo]) / (axis[hi] - axis[lo])


def gemm_seconds(points: Sequence[GemmPoint], m: int, n: int, k: int) -> float:
    """The time of an (m, n, k) product from a full grid of measured ones (see the module's doc)."""
    table = {(p.m, p.n, p.k): p.seconds for p in points}
    axes = [sorted({p.m for p in points}), sorted({p.n for p in points}), sorted({p.k for p in points})]
    inside = [min(max(x, axis[0]), axis[-1]) for axis, x in zip(axes, (m, n, k), strict=True)]
    (m0, m1, tm), (n0, n1, tn), (k0, k1, tk) = (_bracket(a, x) for a, x in zip(axes, inside, strict=True))
    seconds = 0.0
    for i, wi in ((m0, 1 - tm), (m1, tm)):
        for j, wj in ((n0, 1 - tn), (n1, tn)):
            for q, wq in ((k0, 1 - tk), (k1, tk)):
                weight = wi * wj * wq
                if weight:
                    seconds += weight * table[(axes[0][i], axes[1][j], axes[2][q])]
    # Beyond the edge the time grows with the FLOPs beyond it: the edge's rate.
    return seconds * (m * n * k) / (inside[0] * inside[1] * inside[2])


def elementwise_seconds(points: Sequence[ElementwisePoint], elements: int) -> float:
    """The time of one op over `elements` outputs from its measured sizes (see the module's doc)."""
    ordered = sorted(points, key=lambda p: p.elements)
    sizes = [p.elements for p in ordered]
    if elements <= sizes[0]:
        return ordered[0].seconds
    if elements >= sizes[-1]:
        return ordered[-1].seconds * elements / sizes[-1]
    hi = bisect.bisect_left(sizes, elements)
    lo = hi - 1
    t = (math.log(elements) - math.log(sizes[lo])) / (math.log(sizes[hi]) - math.log(sizes[lo]))
    return math.exp((1 - t) * math.log(ordered[lo].seconds) + t * math.log(ordered[hi].seconds))


def predict(
    profile: DeviceProfile, dtype: str, gemms: Sequence[Gemm], passes: Sequence[ElementwisePass], fixed_s: float
) -> Prediction | None:
    """The forecast of a forward made of these ops, or None when the profile lacks the dtype or an op."""
    grid = profile.gemm.get(dtype)
    ops = profile.elementwise.get(dtype, {})
    if not grid or any(p.op not in ops for p in passes):
        return None
    parts = [(g.name, gemm_seconds(grid, g.m, g.n, g.k)) for g in gemms]
    gemm_s = sum(s for _, s in parts)
    ew = [(p.name, elementwise_seconds(ops[p.op], p.elements)) for p in passes]
    return Prediction(gemm_s, sum(s for _, s in ew), fixed_s, tuple(parts + ew))
