"""The registry: every FFN variant, one class in one file, each owning its behaviour.

CLI choices, `ffn variants`, docs/variants.md, the torch modules, the NumPy reference, the
accounting, tensor parallelism and the test parametrisation all ask these objects. Adding a
variant is one file here and one line below. Nothing here imports torch or NumPy at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.variants.activations import ACTIVATIONS, Activation
from ffn_cli.variants.base import Family, FlopStep, ParamTensor, SavedTensor, SplitKind, TensorTemplate, Variant, Weights, Width
from ffn_cli.variants.bilinear import Bilinear
from ffn_cli.variants.geglu import GEGLU
from ffn_cli.variants.gelu import GELU
from ffn_cli.variants.gelu_tanh import GELUTanh
from ffn_cli.variants.glu import GLU
from ffn_cli.variants.mixture import MixtureVariant
from ffn_cli.variants.moe import RoutedMoE
from ffn_cli.variants.reglu import ReGLU
from ffn_cli.variants.relu import ReLU
from ffn_cli.variants.relu2 import ReLUSquared
from ffn_cli.variants.silu import SiLU
from ffn_cli.variants.single import SingleFFN
from ffn_cli.variants.soft_moe import SoftMoE
from ffn_cli.variants.sparse import Sparse
from ffn_cli.variants.swiglu import SwiGLU
from ffn_cli.variants.swiglu_clamp import SwiGLUClamp
from ffn_cli.variants.xielu import XIELU

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

VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        ReLU(),
        GELU(),
        GELUTanh(),
        SiLU(),
        ReLUSquared(),
        XIELU(),
        GLU(),
        Bilinear(),
        ReGLU(),
        GEGLU(),
        SwiGLU(),
        SwiGLUClamp(),
        RoutedMoE(),
        SoftMoE(),
        Sparse(),
    )
}


def variant_names(family: Family | str | None = None) -> list[str]:
    return [v.name for v in VARIANTS.values() if family is None or v.family == family]


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
