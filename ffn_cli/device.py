"""Devices and dtypes: resolve what the user asked for, and refuse what cannot run or fit.

Imports torch: use it from commands that run modules, never from `ffn params`.
"""

from __future__ import annotations

import torch

from ffn_cli.device_name import parse_device_name
from ffn_cli.errors import FFNRuntimeError
from ffn_cli.host_memory import host_memory_room
from ffn_cli.i18n import _
from ffn_cli.modules import resolve_dtype
from ffn_cli.sizes import fmt_bytes

__all__ = ["available_memory_bytes", "preflight", "resolve_device", "resolve_device_dtype"]

# Leave this fraction of free memory untouched: allocator overhead, fragmentation, the OS.
HEADROOM = 0.85


def resolve_device(name: str) -> torch.device:
    """'cpu', 'cuda', 'cuda:N' or 'meta' → a torch.device that exists here."""
    kind, index = parse_device_name(name)
    if kind != "cuda":
        return torch.device(kind)
    if not torch.cuda.is_available():
        raise FFNRuntimeError(
            _("--device {name}: CUDA is not available here; use --device cpu (or --device meta for shapes only)").format(name=name)
        )
    index, count = index or 0, torch.cuda.device_count()
    if index >= count:
        raise FFNRuntimeError(
            _("--device {name}: this machine has {count} CUDA device(s), cuda:0 to cuda:{last}").format(
                name=name, count=count, last=count - 1
            )
        )
    return torch.device("cuda", index)


def resolve_device_dtype(device_name: str, dtype_name: str) -> tuple[torch.device, torch.dtype]:
    """Both at once, refusing a dtype the device cannot compute in (bf16 on pre-Ampere GPUs)."""
    device = resolve_device(device_name)
    dtype = resolve_dtype(dtype_name)
    if device.type == "cuda" and dtype == torch.bfloat16 and not _computes_bf16(device):
        raise FFNRuntimeError(
            _("--dtype bfloat16: {gpu} cannot compute in bfloat16; use float16 or float32").format(gpu=torch.cuda.get_device_name(device))
        )
    return device, dtype


def _computes_bf16(device: torch.device) -> bool:
    """Whether this CUDA device has bfloat16 arithmetic (compute capability 8.0, Ampere, or later;
    every ROCm device). torch.cuda.is_bf16_supported() asks about the current device only and,
    counting emulation, says yes on older GPUs too."""
    return bool(torch.version.hip) or torch.cuda.get_device_capability(device) >= (8, 0)


def available_memory_bytes(device: torch.device) -> int | None:
    """Free memory we may use on `device`: free CUDA memory, or the RAM this process may still
    allocate (the least of MemAvailable, its memory cgroup's room and RLIMIT_AS); None for meta."""
    if device.type == "meta":
        return None
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        # Blocks PyTorch's caching allocator holds but no tensor uses are free to us, not to the driver.
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(free + cached)
    return host_memory_room().bytes_


def preflight(needed_bytes: int, device: torch.device, what: str, *, meta_hint: bool = True) -> None:
    """Refuse before allocating when `needed_bytes` will not fit in what `device` has free.

    meta_hint: suggest --device meta (for commands that can run without memory, as trace can).
    """
    free = available_memory_bytes(device)
    if free is None or needed_bytes <= HEADROOM * free:
        return
    hint = _("use --device meta to see shapes and FLOPs without allocating, or smaller sizes") if meta_hint else _("use smaller sizes")
    raise FFNRuntimeError(
        _("{what} needs about {needed}, more than {pct} % of the {free} free on {device}; {hint}").format(
            what=what, needed=fmt_bytes(needed_bytes), pct=f"{100 * HEADROOM:g}", free=fmt_bytes(free), device=device, hint=hint
        )
    )
