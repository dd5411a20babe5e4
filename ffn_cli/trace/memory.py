"""Bytes of tensors alive during a forward and backward, op by op, on any device (meta included):
every storage an op makes is watched through a weak reference until it is freed.

Counts tensor bytes as torch sizes them, not an allocator's rounding or cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = ["BackwardMemory", "measure_backward_memory"]


@dataclass(frozen=True)
class BackwardMemory:
    start_bytes: int  # alive when the backward began: weights, saved tensors, y, dL/dy
    peak_bytes: int  # the most alive at once during the backward


class _LiveBytes(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.peak = 0

    def watch(self, tensors: Iterable[Tensor]) -> None:
        for t in tensors:
            storage = t.untyped_storage()
            self.live.setdefault(storage._cdata, (StorageWeakRef(storage), storage.nbytes()))

    def now(self) -> int:
        for key in [k for k, (ref, _) in self.live.items() if ref.expired()]:
            del self.live[key]
        return sum(n for _, n in self.live.values())

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.watch(t for t in tree_leaves(out) if isinstance(t, Tensor))
        self.peak = max(self.peak, self.now())
        return out


def measure_backward_memory(module: nn.Module, x: Tensor, make_grad: Callable[[Tensor], Tensor]) -> BackwardMemory:
    """One more forward and backward of `module`, watching every tensor it makes."""
    watcher = _LiveBytes()
    x = x.detach().requires_grad_(True)
    watcher.watch([x, *module.parameters(), *module.buffers()])
    with torch.enable_grad(), watcher:
        out = module(x)
    grad = make_grad(out.detach())
    watcher.watch([grad])
    start = watcher.now()
    watcher.peak = start
    with watcher:
        out.backward(grad)
    module.zero_grad(set_to_none=True)
    return BackwardMemory(start, watcher.peak)
