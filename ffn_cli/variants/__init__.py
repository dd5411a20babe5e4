"""The registry: every FFN variant, one class in one file, each owning its behaviour.

CLI choices, `ffn variants`, docs/variants.md, the torch modules, the NumPy reference, the
accounting, tensor parallelism and the test parametrisation all ask these objects. Adding a
variant is one file here and one line in `table.py` (and, where it computes differently from
its base class, its NumPy form in `ffn_cli/reference/`, found by its class). Nothing here
imports torch or NumPy at import time, and a variant's file is imported only when its name is
first looked up (`registry.Registry`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.variants.activations import ACTIVATIONS, Activation
from ffn_cli.variants.base import Family, FlopStep, ParamTensor, SavedTensor, SplitKind, TensorTemplate, Variant, Weights, Width
from ffn_cli.variants.mixture import MixtureVariant
from ffn_cli.variants.single import SingleFFN
from ffn_cli.variants.table import VARIANTS

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = [
    "ACTIVATIONS",
    "VARIANTS",
    "Activation",
    "Family",
    "FlopStep",
    "MixtureVariant",
    "ParamTensor",
    "SavedTensor",
    "SingleFFN",
    "SplitKind",
    "TensorTemplate",
    "Variant",
    "Weights",
    "Width",
    "mixture_of",
    "single_of",
    "variant_names",
]


def variant_names(family: Family | str | None = None) -> list[str]:
    """Every name, or those of one family (which loads every variant to ask it)."""
    return list(VARIANTS) if family is None else [v.name for v in VARIANTS.values() if v.family == family]


# The kind questions, answered here: the base class knows none of its subclasses.
def mixture_of(variant: Variant) -> MixtureVariant | None:
    """The variant as a mixture of experts, or None for one FFN."""
    return variant if isinstance(variant, MixtureVariant) else None


def single_of(variant: Variant, spec: FFNShape) -> SingleFFN:
    """The variant one FFN of `spec` is made of: itself, or a mixture's expert variant."""
    mixture = mixture_of(variant)
    if mixture is not None:
        return mixture.expert(spec)
    if not isinstance(variant, SingleFFN):
        raise TypeError(f"{variant.name} is neither one FFN nor a mixture")
    return variant
