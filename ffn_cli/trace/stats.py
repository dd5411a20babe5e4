"""Value statistics of a tensor, and the flags they raise: NaN, Inf, and float16 / bfloat16
overflow and underflow. Computed on the tensor's own device; meta tensors have none."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from ffn_cli.trace.result import TensorStats

__all__ = ["first_values", "tensor_stats", "value_flags"]

LOW_PRECISION = (torch.float16, torch.bfloat16)


def tensor_stats(t: Tensor) -> TensorStats | None:
    """Stats of a real floating tensor, computed on its device; None for meta, integer or empty."""
    if t.is_meta or not t.is_floating_point() or t.numel() == 0:
        return None
    x = t.detach()
    xf = x.float() if x.dtype in LOW_PRECISION else x
    nan, inf = int(torch.isnan(xf).sum()), int(torch.isinf(xf).sum())
    finite = xf[torch.isfinite(xf)] if nan or inf else xf.reshape(-1)
    tiny = torch.finfo(x.dtype).tiny
    counts = torch.stack([(xf == 0).sum(), (xf < 0).sum(), ((xf != 0) & (xf.abs() < tiny)).sum()]).tolist()
    if finite.numel():
        std, mean = torch.std_mean(finite.double(), correction=0)
        low, high = torch.aminmax(finite)
        moments = [float(mean), float(std), float(low), float(high)]
    else:
        moments = [math.nan] * 4
    return TensorStats(x.numel(), *moments, int(counts[0]), int(counts[1]), nan, inf, int(counts[2]))


def first_values(t: Tensor, n: int) -> tuple[float, ...] | None:
    """The first n values of token 0: row 0 once every leading dim is flattened."""
    if n <= 0 or t.is_meta or t.numel() == 0:
        return None
    rows = t.detach().reshape(-1, t.shape[-1]) if t.dim() else t.detach().reshape(1, 1)
    return tuple(float(v) for v in rows[0, :n].double().tolist())


def value_flags(stats: Sequence[TensorStats], dtype: str, input_stats: TensorStats | None) -> tuple[str, ...]:
    """NaN / Inf anywhere in `stats`; overflow and underflow for float16 / bfloat16. Inf is
    called overflow only where it did not already come in with the input."""
    flags = []
    low = dtype in ("float16", "bfloat16")
    if any(s.inf for s in stats):
        came_in = input_stats is not None and input_stats.inf > 0
        flags.append("overflow" if low and not came_in else "Inf")
    if any(s.nan for s in stats):
        flags.append("NaN")
    subnormal = max((s.subnormal for s in stats), default=0)
    if low and subnormal:
        flags.append(f"underflow ({subnormal} subnormal)")
    return tuple(flags)
