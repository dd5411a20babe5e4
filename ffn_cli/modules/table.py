"""The nn.Module each kind of variant builds: a table by variant class, looked up along the
class hierarchy (a subclass builds what its nearest listed base builds), so the registry
describes variants without importing a torch module."""

from __future__ import annotations

from collections.abc import Callable

from ffn_cli.modules.ffn import FFN, FFNModule
from ffn_cli.modules.mixture import MoEFFN, SoftMoEFFN
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import SingleFFN, SoftMoE, Variant
from ffn_cli.variants.moe import RoutedMoE

__all__ = ["MODULES", "module_for"]

MODULES: dict[type[Variant], Callable[[FFNSpec, Variant], FFNModule]] = {
    SingleFFN: lambda spec, variant: FFN(spec, variant, spec.hidden),  # type: ignore[arg-type]
    RoutedMoE: MoEFFN,  # type: ignore[dict-item]
    SoftMoE: SoftMoEFFN,  # type: ignore[dict-item]
}


def module_for(spec: FFNSpec) -> FFNModule:
    """The (not yet initialised) module of spec's variant, built under the caller's device."""
    variant = spec.info
    for cls in type(variant).__mro__:
        make = MODULES.get(cls)
        if make is not None:
            return make(spec, variant)
    raise TypeError(f"no torch module is listed for {type(variant).__name__} or its bases (modules/table.py)")
