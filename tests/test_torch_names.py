"""The tracer's only torch names with an underscore (ffn_cli/tracing/torch_names.py), held to
their meaning: these run on the floor torch and the newest too (scripts/check_floor_versions.sh)."""

from __future__ import annotations

import pytest
import torch

from ffn_cli.tracing.torch_names import TorchDispatchMode, storage_id, writes_an_argument

aten = torch.ops.aten


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_a_storage_is_known_through_its_views_and_apart_from_others(device: str) -> None:
    a = torch.empty(4, 6, device=device)
    b = torch.empty(4, 6, device=device)
    assert storage_id(a) == storage_id(a.view(6, 4)) == storage_id(a[1:]) == storage_id(a.t())
    assert storage_id(a) != storage_id(b)
    many = [torch.empty(3, device=device) for _ in range(200)]
    assert len({storage_id(t) for t in many}) == 200


class _NoSchema:
    """An op as a torch without `_schema` would show it: only its public names."""

    def __init__(self, func) -> None:
        self._func = func
        self.overloadpacket = func.overloadpacket

    def name(self) -> str:
        return self._func.name()


WRITERS = [aten.add_.Tensor, aten.mul_.Tensor, aten.copy_.default, aten.index_add_.default, aten.add.out, aten.mm.out, aten.relu_.default]
READERS = [
    aten.add.Tensor,
    aten.mm.default,
    aten.relu.default,
    aten.index_add.default,
    aten.topk.default,
    aten.view.default,
    aten.t.default,
]


@pytest.mark.parametrize("func", WRITERS + READERS, ids=lambda f: f.name())
def test_what_writes_an_argument_by_schema_and_by_name(func) -> None:
    expected = func in WRITERS
    assert writes_an_argument(func) is expected
    assert writes_an_argument(_NoSchema(func)) is expected


def test_the_dispatch_mode_sees_every_aten_op() -> None:
    seen: list[str] = []

    class Names(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Names():
        torch.relu(torch.ones(2, 2) @ torch.ones(2, 2))
    assert "mm" in seen and "relu" in seen
