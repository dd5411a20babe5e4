"""Backward from a given output gradient, started the way torch starts a scalar's.

`out.backward(grad)` with a gradient tensor has torch check that tensor's shape through its
symbolic-shapes module, whose first import (SymPy) takes about half a second. So the backward
starts from a one-element tensor made from `out`, whose own gradient torch makes itself (a one),
and whose node hands `grad` to `out` unchanged: the same backward, every node of `out`'s graph
given the same gradients.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = ["gradient_seed"]


class _HandOn(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, out: Tensor, grad: Tensor) -> Tensor:
        ctx.grad = grad
        return torch.zeros((), dtype=out.dtype, device=out.device)

    @staticmethod
    def backward(ctx: Any, _one: Tensor) -> tuple[Tensor, None]:
        return ctx.grad, None


def gradient_seed(out: Tensor, grad: Tensor) -> Tensor:
    """A one-element tensor whose `.backward()` is `out.backward(grad)`. Made before any of ffn's
    recording modes is entered: its own making is not part of the run. Made with grad mode on,
    as `out.backward(grad)` needs none (a caller's `torch.no_grad()` block stops neither)."""
    with torch.enable_grad():
        return _HandOn.apply(out, grad.detach())
