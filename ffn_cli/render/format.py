"""Number and shape formatting shared by every table."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ffn_cli.i18n import N_, _
from ffn_cli.sizes import fmt_bytes

__all__ = ["fmt_bytes", "fmt_count", "fmt_fixed", "fmt_flops", "fmt_rate", "fmt_shape", "fmt_si", "fmt_value"]

# A statistic summed in float32 lands a few parts in 10⁷ either side of an exact value (the mean
# of a softmax over 64 experts is 1/64 = 0.015625), and which side depends on the machine's
# summation order. A value this close to a rounding tie is rounded as the tie itself would be
# (half to even), so the printed digits are the same on every machine.
TIE_TOLERANCE = 5e-7


def _tie_broken(scaled: float) -> float:
    """`scaled`, moved onto the even neighbour when it lies within TIE_TOLERANCE of a .5 tie."""
    below = math.floor(scaled)
    if abs(scaled - (below + 0.5)) > TIE_TOLERANCE * max(abs(scaled), 1.0):
        return scaled
    return float(below if below % 2 == 0 else below + 1)


def fmt_value(value: float, digits: int = 4) -> str:
    """A tensor statistic to `digits` significant digits (as `:.4g`), near-ties broken one way."""
    if not math.isfinite(value) or value == 0:
        return f"{value:.{digits}g}"
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(abs(value))))
    return f"{_tie_broken(value * scale) / scale:.{digits}g}"


def fmt_fixed(value: float, decimals: int = 4) -> str:
    """A value to `decimals` places, sign column kept (as `: .4f`), near-ties broken one way."""
    if not math.isfinite(value):
        return f"{value: .{decimals}f}"
    scale = 10.0**decimals
    return f"{_tie_broken(value * scale) / scale: .{decimals}f}"


def fmt_count(n: int) -> str:
    """Exact, with thousands separators: 2,099,712."""
    return f"{n:,}"


def fmt_rate(value: float) -> str:
    """A peak rate or a bandwidth as a datasheet writes it (TFLOP/s, GB/s): thousands
    separated, four significant digits below a thousand, never e-notation: 1,307.4, 989.5, 0.0351."""
    if abs(value) >= 1000:
        return f"{value:,.1f}".removesuffix(".0")
    return f"{value:.4g}"


def fmt_si(value: float, unit: str = "", digits: int = 3) -> str:
    """Scaled with an SI prefix: 12.9 G, 4.19 TFLOP."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}".rstrip()
    return f"{value:.{digits}g} {unit}".rstrip()


def fmt_flops(flops: float) -> str:
    return fmt_si(flops, "FLOP")


def fmt_shape(shape: Sequence[int]) -> str:
    """(2, 5, 512), as the tutorials print shapes."""
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


# Each cache mode said whole, so that a language names it in its own words (冷缓存, not "缓存 cold").
_CACHE_WORDS = {"cold": N_("cache cold"), "hot": N_("cache hot")}


def cache_words(cache: str) -> str:
    """A bench run's cache mode (cold / hot) as its table and its plot name it."""
    return _(_CACHE_WORDS[cache]) if cache in _CACHE_WORDS else cache
