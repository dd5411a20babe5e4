"""Device and dtype resolution on CUDA machines, faked: the suite runs where there is no GPU."""

from __future__ import annotations

import pytest
import torch

from ffn_cli.device import available_memory_bytes, resolve_device_dtype
from ffn_cli.errors import FFNRuntimeError


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda:0 an H100 (compute capability 9.0), cuda:1 a V100 (7.0); cuda:0 is current."""
    capability = {0: (9, 0), 1: (7, 0)}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability[torch.device(device).index])
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA fake")
    monkeypatch.setattr(torch.version, "hip", None)


@pytest.mark.usefixtures("two_gpus")
def test_bfloat16_is_judged_on_the_device_asked_for() -> None:
    assert resolve_device_dtype("cuda:0", "bfloat16") == (torch.device("cuda", 0), torch.bfloat16)
    with pytest.raises(FFNRuntimeError, match="cannot compute in bfloat16"):
        resolve_device_dtype("cuda:1", "bfloat16")
    assert resolve_device_dtype("cuda:1", "float16")[1] == torch.float16


def test_memory_the_caching_allocator_holds_unused_counts_as_free(monkeypatch: pytest.MonkeyPatch) -> None:
    # A sweep frees each case's tensors into PyTorch's cache: the next case may use them.
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10 << 30, 141 << 30))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 50 << 30)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 20 << 30)
    assert available_memory_bytes(torch.device("cuda", 1)) == 40 << 30
