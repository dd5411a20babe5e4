"""Shell completion of option values: variant names, presets, devices, dtypes, implementations.

Each function takes what the user has typed of the value and returns the candidates; a comma
list (`relu,sw<TAB>`) completes its last item. None imports torch: completion must be instant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["complete_devices", "complete_dtypes", "complete_impls", "complete_presets", "complete_variants", "cuda_count"]

_DTYPES = ("float32", "float64", "float16", "bfloat16", "float8")
_IMPLS = ("eager", "fused", "compile", "fused-compile", "autotune", "fused-autotune", "all")


def _items(candidates: Sequence[str], comma_list: bool = True) -> Callable[[str], list[str]]:
    def complete(incomplete: str) -> list[str]:
        head, _, last = incomplete.rpartition(",") if comma_list else ("", "", incomplete)
        taken = set(head.split(",")) if head else set()
        prefix = head + "," if head else ""
        return [prefix + c for c in candidates if c.startswith(last) and c not in taken]

    return complete


def complete_variants(incomplete: str) -> list[str]:
    from ffn_cli.variants import variant_names

    return _items([*variant_names(), "all"])(incomplete)


def complete_presets(incomplete: str) -> list[str]:
    from ffn_cli.models.config import preset_names

    return _items(preset_names(), comma_list=False)(incomplete)


def cuda_count() -> int:
    """GPUs the NVIDIA driver lists, read without importing torch (0 where there is none)."""
    gpus = Path("/proc/driver/nvidia/gpus")
    return sum(1 for _ in gpus.iterdir()) if gpus.is_dir() else 0


def complete_devices(incomplete: str) -> list[str]:
    devices = ["cpu", "meta"]
    count = cuda_count()
    if count:
        devices += ["cuda", *(f"cuda:{i}" for i in range(count))]
    return _items(devices, comma_list=False)(incomplete)


def complete_dtypes(incomplete: str) -> list[str]:
    return _items(_DTYPES)(incomplete)


def complete_impls(incomplete: str) -> list[str]:
    return _items(_IMPLS)(incomplete)
