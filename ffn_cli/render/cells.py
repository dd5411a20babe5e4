"""Cell formatters the forward and backward tables share, so a value or a shape list reads the
same in every table of `ffn trace`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ffn_cli.i18n import _
from ffn_cli.render.format import fmt_count, fmt_shape, fmt_value
from ffn_cli.tracing.result import TensorStats, grad_norm

__all__ = ["MAX_SHAPES", "gradient_stats_cells", "num", "shapes", "stats_cells"]

# The forward's input / output cells list at most this many distinct shapes, then "+N more".
MAX_SHAPES = 3


def num(value: float | None) -> str:
    """A statistic: blank when there is none, n/a when it is not a number."""
    return "" if value is None else "n/a" if math.isnan(value) else fmt_value(value)


def shapes(seen: Sequence[tuple[int, ...]], arrow: str = "", limit: int | None = None) -> str:
    """Each distinct shape once, one per line, each after `arrow`; past `limit`, "+N more"."""
    distinct = list(dict.fromkeys(seen))
    text = "\n".join(arrow + fmt_shape(s) for s in distinct[:limit])
    if limit is not None and len(distinct) > limit:
        text += "\n" + _("+{count} more").format(count=len(distinct) - limit)
    return text


def stats_cells(stats: TensorStats | None) -> list[str]:
    """mean, std, min, max, % zeros and negatives of a forward tensor."""
    if stats is None:
        return ["", "", "", "", "", ""]
    return [num(stats.mean), num(stats.std), num(stats.min), num(stats.max), f"{stats.zeros_pct:.1f}", fmt_count(stats.negatives)]


def gradient_stats_cells(stats: TensorStats | None) -> list[str]:
    """norm, mean and largest magnitude of a gradient."""
    if stats is None:
        return ["", "", ""]
    return [num(grad_norm(stats)), num(stats.mean), num(max(abs(stats.min), abs(stats.max)))]
