"""Bytes of tensors alive during a forward and backward, op by op, on any device (meta included):
every storage an op makes is watched through a weak reference until it is freed.

Counts tensor bytes as torch sizes them, not an allocator's rounding or cache.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ffn_cli.tracing.gradient_seed import gradient_seed
from ffn_cli.tracing.leaves import flowing_output, tensor_leaves
from ffn_cli.tracing.torch_names import DispatchMode, storage_id
from ffn_cli.user_code import users_op

__all__ = ["BackwardMemory", "measure_backward_memory"]


@dataclass(frozen=True)
class BackwardMemory:
    start_bytes: int  # alive when the backward began: weights, saved tensors, y, dL/dy
    peak_bytes: int  # the most alive at once during the backward


class _LiveBytes(DispatchMode):
    """The bytes of every watched storage still alive, kept as a running sum: a storage's weak
    reference takes its bytes off when it is freed, so no op rescans the live set (a rescan
    per op is quadratic in a mixture's thousands of expert weights)."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, weakref.ref[Any]] = {}
        self.total = 0
        self.peak = 0

    def watch(self, tensors: Iterable[Tensor]) -> None:
        for t in tensors:
            # The storage's Python object lives exactly as long as the storage (PyTorch preserves it).
            storage = t.untyped_storage()
            address = storage_id(t)
            if address not in self.live:
                nbytes = storage.nbytes()
                self.live[address] = weakref.ref(storage, self._freed(address, nbytes))
                self.total += nbytes

    def _freed(self, address: int, nbytes: int) -> Callable[[Any], None]:
        def freed(ref: Any) -> None:
            if self.live.get(address) is ref:
                del self.live[address]
                self.total -= nbytes

        return freed

    def now(self) -> int:
        return self.total

    def dispatch(self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        out = users_op(func, args, kwargs or {})
        self.watch(tensor_leaves(out))
        self.peak = max(self.peak, self.now())
        return out


def measure_backward_memory(
    module: nn.Module, x: Tensor, make_grad: Callable[[Tensor], Tensor], call: Callable[[Tensor], Any] | None = None
) -> BackwardMemory:
    """One more forward and backward of `module` (through `call`, which runs it, if given),
    watching every tensor it makes."""
    watcher = _LiveBytes()
    x = x.detach().requires_grad_(True)
    watcher.watch([x, *module.parameters(), *module.buffers()])
    with torch.enable_grad(), watcher:
        _where, out, _others = flowing_output((call or module)(x), tuple(x.shape))  # the tensor the trace follows
    grad = make_grad(out.detach())
    watcher.watch([grad])
    seed = gradient_seed(out, grad)
    start = watcher.now()
    watcher.peak = start
    with watcher:
        seed.backward()
    module.zero_grad(set_to_none=True)
    return BackwardMemory(start, watcher.peak)
