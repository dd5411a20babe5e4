"""Shell completion of option values: variant names, presets, devices, dtypes, implementations.

Each function takes the command's context and what the user has typed of the value, and returns
what that command takes: `ffn bench --device` offers no meta (bench refuses it), `ffn trace
--dtype` no float8 and no comma list (it runs one), `ffn params --preset` a comma list (it
compares). A comma list (`relu,sw<TAB>`) completes its last item. None imports torch:
completion must be instant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import typer

from ffn_cli.device_name import RUN_DTYPES
from ffn_cli.variants import Family, variant_names

__all__ = [
    "complete_devices",
    "complete_dtypes",
    "complete_expert_variants",
    "complete_impls",
    "complete_presets",
    "complete_variants",
    "cuda_count",
]

# Dtypes a module runs in; params also counts bytes of float8 weights.
_COUNT_DTYPES = (*RUN_DTYPES, "float8")
# Commands that take a comma list of the option: params compares, bench sweeps; trace runs one.
_LISTS = {"variant": ("params", "bench"), "preset": ("params",), "dtype": ("bench",)}
_IMPLS = ("eager", "fused", "compile", "fused-compile", "autotune", "fused-autotune", "all")


def _items(candidates: Sequence[str], comma_list: bool = True) -> Callable[[str], list[str]]:
    def complete(incomplete: str) -> list[str]:
        head, _, last = incomplete.rpartition(",") if comma_list else ("", "", incomplete)
        taken = set(head.split(",")) if head else set()
        prefix = head + "," if head else ""
        return [prefix + c for c in candidates if c.startswith(last) and c not in taken]

    return complete


def _command(ctx: typer.Context | None) -> str:
    """The subcommand being completed ('' outside one, as when called directly)."""
    return (ctx.info_name or "") if ctx is not None else ""


def _lists(ctx: typer.Context | None, option: str) -> bool:
    command = _command(ctx)
    return not command or command in _LISTS[option]


def complete_variants(ctx: typer.Context, incomplete: str) -> list[str]:
    many = _lists(ctx, "variant")
    every = ["all"] if many and "," not in incomplete else []  # all stands alone
    return _items([*variant_names(), *every], comma_list=many)(incomplete)


def complete_expert_variants(incomplete: str) -> list[str]:
    """Experts are dense or gated (spec.py refuses a mixture of mixtures)."""
    return _items(variant_names(Family.DENSE) + variant_names(Family.GATED), comma_list=False)(incomplete)


def complete_presets(ctx: typer.Context, incomplete: str) -> list[str]:
    from ffn_cli.configs.files import preset_names

    return _items(preset_names(), comma_list=_lists(ctx, "preset") and _command(ctx) != "")(incomplete)


def cuda_count() -> int:
    """GPUs the NVIDIA driver lists, read without importing torch (0 where there is none)."""
    gpus = Path("/proc/driver/nvidia/gpus")
    return sum(1 for _ in gpus.iterdir()) if gpus.is_dir() else 0


def complete_devices(ctx: typer.Context, incomplete: str) -> list[str]:
    devices = ["cpu"] + (["meta"] if _command(ctx) != "bench" else [])  # bench times real computation
    count = cuda_count()
    if count:
        devices += ["cuda", *(f"cuda:{i}" for i in range(count))]
    return _items(devices, comma_list=False)(incomplete)


def complete_dtypes(ctx: typer.Context, incomplete: str) -> list[str]:
    dtypes = _COUNT_DTYPES if _command(ctx) in ("params", "") else RUN_DTYPES
    return _items(dtypes, comma_list=_lists(ctx, "dtype") and _command(ctx) != "params")(incomplete)


def complete_impls(incomplete: str) -> list[str]:
    return _items(_IMPLS)(incomplete)
