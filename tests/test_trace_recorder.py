"""The recorder costs what a plain forward costs: no Dynamo imported, intermediates freed when a
plain forward frees them, and what autograd would save measured without keeping it."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from ffn_cli import build_ffn
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.recorder import StorageSerials, record
from tests.helpers import ALL_VARIANTS, small_spec

pytestmark = pytest.mark.usefixtures("one_thread")


def test_intermediates_are_freed_during_the_forward() -> None:
    # up_proj's output is read once, by the activation (ReLU saves its result, not its input);
    # a plain forward frees it there, and so must the recorder: no list of every output, and
    # nothing held for a backward that never runs.
    module = build_ffn(FFNSpec(variant="relu", d_model=16, d_ff=32)).eval()
    seen: list[weakref.ref[torch.Tensor]] = []
    alive_at_down_proj: list[bool] = []
    module.up_proj.register_forward_hook(lambda m, a, out: seen.append(weakref.ref(out)))
    module.down_proj.register_forward_pre_hook(lambda m, a: alive_at_down_proj.append(seen[0]() is not None))
    out, rec = record(module, torch.randn(2, 3, 16))
    assert alive_at_down_proj == [False]
    assert rec.saved_bytes > 0 and out.grad_fn is None


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_saved_bytes_are_what_autograd_saves(variant: str) -> None:
    # Second path: a plain forward with autograd keeping its tensors, each storage counted once.
    module = build_ffn(small_spec(variant)).eval()
    x = torch.randn(2, 3, module.spec.d_model)
    params = {p.untyped_storage().data_ptr() for p in [*module.parameters(), *module.buffers()]}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = module(x)
    assert record(module, x)[1].saved_bytes == sum(saved.values())
    del y


def test_storage_serials_are_never_reused() -> None:
    serials = StorageSerials()
    first = torch.empty(1000)
    s1 = serials.of(first)
    assert serials.get(first) == s1 == serials.of(first[10:])  # a view shares its storage's serial
    del first
    gc.collect()
    second = torch.empty(1000)  # may well land at the freed storage's address
    assert serials.get(second) is None
    assert serials.of(second) != s1


class _InPlace(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * 2
        h.add_(1)  # same storage, new values
        return h.view(-1)


def test_statistics_follow_in_place_writes() -> None:
    # Views share statistics with the data they show, but never across an in-place write.
    x = torch.randn(4, 8)
    _, rec = record(_InPlace(), x)
    by_op = {op.record.op: op.stats for op in rec.ops}
    for name, values in (("aten.mul", x * 2), ("aten.add_", x * 2 + 1), ("aten.view", x * 2 + 1)):
        stats = by_op[name]
        assert stats is not None and stats.mean == pytest.approx(float(values.double().mean()), rel=1e-12), name
