"""Number and shape formatting shared by every table."""

from __future__ import annotations

from collections.abc import Sequence

from ffn_cli.sizes import fmt_bytes

__all__ = ["fmt_bytes", "fmt_count", "fmt_flops", "fmt_shape", "fmt_si"]


def fmt_count(n: int) -> str:
    """Exact, with thousands separators: 2,099,712."""
    return f"{n:,}"


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
