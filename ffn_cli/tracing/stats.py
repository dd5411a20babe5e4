"""Value statistics of a tensor, and the flags they raise: NaN, Inf, and float16 / bfloat16
overflow and underflow. Computed on the tensor's own device; meta tensors have none.

One pass over the tensor, a chunk at a time: each chunk is copied (exactly) into a reused
float64 buffer, so a large tensor never gets a float64 copy of its own, and every sum is
accumulated in float64. Chunks' means and squared deviations combine exactly as in Chan et
al.'s parallel variance. A tensor of one chunk gets `torch.std_mean` on its float64 copy, so
small tensors keep the very bits they always had; a larger one's mean and std can differ from
that in the last digit or two of seventeen (as they always did between thread counts).
A histogram of the finite values (numpy.histogram's bins, from min to max) takes one more
pass over a large tensor's chunks, once min and max are known.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

import torch
from torch import Tensor

from ffn_cli.i18n import N_, Message
from ffn_cli.tracing.result import HISTOGRAM_BINS, TensorStats, histogram_edges

__all__ = ["CHUNK_ELEMENTS", "first_values", "pooled_stats", "tensor_stats", "value_flags"]

# Elements per chunk: a 2 MiB float64 buffer on CPU (it stays in cache); larger on GPUs,
# where each chunk is a kernel launch.
CHUNK_ELEMENTS = {"cpu": 1 << 18}
DEVICE_CHUNK_ELEMENTS = 1 << 22

# A chunk's partial results, one float64 row: kept on the device until one read at the end.
_N, _SUM, _M2, _MIN, _MAX, _ZEROS, _NEG, _SMALL, _NAN, _INF = range(10)


def tensor_stats(t: Tensor) -> TensorStats | None:
    """Stats of a real floating tensor, computed on its device; None for meta, integer or empty."""
    if t.is_meta or not t.is_floating_point() or t.numel() == 0:
        return None
    flat = t.detach().reshape(-1)
    size = CHUNK_ELEMENTS.get(flat.device.type, DEVICE_CHUNK_ELEMENTS)
    buffer = torch.empty(min(size, flat.numel()), dtype=torch.float64, device=flat.device)
    tiny = torch.finfo(t.dtype).tiny
    if flat.numel() <= size:
        # With the threads the caller runs with: a parallel reduction's bits depend on them.
        return _one_chunk(flat, buffer, tiny)
    with _one_thread(flat.device):
        rows = torch.stack([_partial(c, buffer, tiny, careful=False) for c in flat.split(size)])
        if not math.isfinite(float(rows[:, _SUM].sum())):
            # NaN or Inf somewhere (or a float64 sum that overflowed): count them, skip them.
            rows = torch.stack([_partial(c, buffer, tiny, careful=True) for c in flat.split(size)])
        stats = _combine(flat.numel(), rows.tolist())
        if stats.nan + stats.inf == stats.numel:
            return stats
        bounds = _bounds(stats.min, stats.max)
        counts = buffer.new_zeros(HISTOGRAM_BINS, dtype=torch.int64)
        for chunk in flat.split(size):
            b = buffer[: chunk.numel()]
            b.copy_(chunk)
            counts += _bin_counts(b[torch.isfinite(b)] if stats.nan or stats.inf else b, bounds)
        return replace(stats, histogram=tuple(counts.tolist()))


@contextmanager
def _one_thread(device: torch.device) -> Iterator[None]:
    """CPU chunks are too small to split among threads: waking the pool for each of the
    dozen ops per chunk costs more than the op, and far more on a busy machine."""
    threads = torch.get_num_threads()
    if device.type != "cpu" or threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _partial(chunk: Tensor, buffer: Tensor, tiny: float, *, careful: bool) -> Tensor:
    """One chunk's row: finite count, sum, squared deviations from its own mean, min, max,
    and the counts (zeros, negatives, |x| < tiny, NaN, Inf)."""
    b = buffer[: chunk.numel()]
    b.copy_(chunk)  # exact: every float16 / bfloat16 / float32 value is a float64 value
    n_all = b.numel()
    zeros = n_all - torch.count_nonzero(b)
    counts = [zeros, torch.count_nonzero(b < 0), torch.count_nonzero(b.abs() < tiny)]
    nan = inf = b.new_zeros(())
    if careful:
        nan, inf = torch.count_nonzero(torch.isnan(b)), torch.count_nonzero(torch.isinf(b))
        b = b[torch.isfinite(b)]
    if b.numel() == 0:
        moments = [b.new_zeros(()), b.new_zeros(()), b.new_zeros(()), b.new_tensor(math.inf), b.new_tensor(-math.inf)]
    else:
        total = b.sum()
        deviation = b - total / b.numel()
        low, high = torch.aminmax(b)
        moments = [b.new_tensor(float(b.numel())), total, torch.dot(deviation, deviation), low, high]
    return torch.stack([*moments, *(c.to(torch.float64) for c in counts), nan.to(torch.float64), inf.to(torch.float64)])


Moments = tuple[float, float, float, float]  # mean, std, min, max
_NO_MOMENTS: Moments = (math.nan, math.nan, math.nan, math.nan)  # no finite value


def _one_chunk(flat: Tensor, buffer: Tensor, tiny: float) -> TensorStats:
    """A tensor that fits in one chunk: `torch.std_mean` on its float64 copy, as it always was."""
    x = buffer
    x.copy_(flat)
    nan, inf = int(torch.count_nonzero(torch.isnan(x))), int(torch.count_nonzero(torch.isinf(x)))
    finite = x[torch.isfinite(x)] if nan or inf else x
    zeros, negatives, small = torch.stack([x == 0, x < 0, x.abs() < tiny]).count_nonzero(dim=1).tolist()
    if finite.numel():
        std, mean = torch.std_mean(finite, correction=0)
        low, high = torch.aminmax(finite)
        moments: Moments = (float(mean), float(std), float(low), float(high))
        histogram = tuple(_bin_counts(finite, _bounds(moments[2], moments[3])).tolist())
    else:
        moments, histogram = _NO_MOMENTS, None
    return TensorStats(x.numel(), *moments, zeros, negatives, nan, inf, small - zeros, histogram=histogram)


def _bounds(low: float, high: float) -> tuple[float, float]:
    """The histogram's range: min to max, as numpy.histogram takes it (one value: ±0.5 around it)."""
    edges = histogram_edges(low, high)
    return edges[0], edges[-1]


def _bin_counts(finite: Tensor, bounds: tuple[float, float]) -> Tensor:
    """Counts per bin, in one pass: torch.histc bins as numpy.histogram does, [edge_i, edge_i+1)
    with the max in the last bin (a value within rounding of an inner edge may fall either side)."""
    return torch.histc(finite, bins=HISTOGRAM_BINS, min=bounds[0], max=bounds[1]).to(torch.int64)


def _combine(numel: int, rows: list[list[float]]) -> TensorStats:
    """The chunks' rows as one tensor's stats (Chan et al.: means and squared deviations add
    up exactly, with a correction for the distance between the chunks' means)."""
    n = mean = m2 = 0.0
    low, high = math.inf, -math.inf
    for row in rows:
        count = row[_N]
        if count == 0:
            continue
        chunk_mean, total = row[_SUM] / count, n + count
        delta = chunk_mean - mean
        mean += delta * count / total
        m2 += row[_M2] + delta * delta * n * count / total
        n = total
        low, high = min(low, row[_MIN]), max(high, row[_MAX])
    moments: Moments = (mean, math.sqrt(m2 / n), low, high) if n else _NO_MOMENTS
    zeros, negatives, small, nan, inf = (int(sum(row[i] for row in rows)) for i in (_ZEROS, _NEG, _SMALL, _NAN, _INF))
    return TensorStats(numel, *moments, zeros, negatives, nan, inf, small - zeros)


def first_values(t: Tensor, n: int) -> tuple[float, ...] | None:
    """The first n values of token 0: row 0 once every leading dim is flattened."""
    if n <= 0 or t.is_meta or t.numel() == 0:
        return None
    rows = t.detach().reshape(-1, t.shape[-1]) if t.dim() else t.detach().reshape(1, 1)
    return tuple(float(v) for v in rows[0, :n].double().tolist())


def value_flags(stats: Sequence[TensorStats], dtype: str, input_stats: TensorStats | None) -> tuple[str, ...]:
    """NaN / Inf anywhere in `stats`; overflow and underflow for float16 / bfloat16. Inf is
    called overflow only where it did not already come in with the input. Each flag is a
    Message: English in --json, the reader's language in the tables."""
    flags: list[str] = []
    low = dtype in ("float16", "bfloat16")
    if any(s.inf for s in stats):
        came_in = input_stats is not None and input_stats.inf > 0
        flags.append(Message(N_("overflow")) if low and not came_in else "Inf")
    if any(s.nan for s in stats):
        flags.append("NaN")
    subnormal = max((s.subnormal for s in stats), default=0)
    if low and subnormal:
        flags.append(Message(N_("underflow ({count} subnormal)"), count=subnormal))
    return tuple(flags)


def pooled_stats(parts: Sequence[TensorStats]) -> TensorStats:
    """Several tensors' statistics as those of all their values together: counts add up, and the
    means and variances combine as the chunks of one tensor do (Chan et al.). No histogram:
    the parts' bins do not share edges."""
    n = mean = m2 = 0.0
    for part in parts:
        finite = part.numel - part.nan - part.inf
        if finite <= 0 or math.isnan(part.mean):
            continue
        total = n + finite
        delta = part.mean - mean
        mean += delta * finite / total
        m2 += part.std * part.std * finite + delta * delta * n * finite / total
        n = total
    finite_parts = [p for p in parts if p.numel - p.nan - p.inf > 0 and not math.isnan(p.mean)]
    moments: Moments = (mean, math.sqrt(m2 / n), min(p.min for p in finite_parts), max(p.max for p in finite_parts)) if n else _NO_MOMENTS
    counts = [sum(getattr(p, name) for p in parts) for name in ("zeros", "negatives", "nan", "inf", "subnormal")]
    return TensorStats(sum(p.numel for p in parts), *moments, *counts)
