"""Byte sizes in words, for the renderers and for errors raised below them (device.py)."""

from __future__ import annotations

__all__ = ["fmt_bytes"]


def fmt_bytes(n: float) -> str:
    """Binary units, as memory is sized: 4.00 MiB."""
    for factor, unit in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if abs(n) >= factor:
            return f"{n / factor:,.2f} {unit}"  # 1,023.17 GiB: a separator, as every count has
    return f"{int(n)} B"
