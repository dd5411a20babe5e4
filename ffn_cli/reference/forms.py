"""Which reference form computes a variant: the one registered for its class, or for its
nearest base class that has one (`swiglu` runs the gated form, `swiglu_clamp` its own).

A form is written from its variant's formula and shares nothing with the torch path but the
weights; the variant object supplies only its declaration (its activation, its expert, its
tensors). `tests/test_reference_forms.py` fails for a registry variant no form computes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ffn_cli.variants import MixtureVariant, SingleFFN, Variant

if TYPE_CHECKING:
    from ffn_cli.reference.numpy_ops import Array, Gradients
    from ffn_cli.variants.shape import FFNShape

__all__ = ["Form", "MixtureForm", "SingleForm", "form_of", "reference_of"]

V = TypeVar("V", bound=Variant)
F = TypeVar("F", bound="type[Form[Any]]")


class Form(Generic[V]):
    """One variant's float64 forward and hand-written backward on (N, d) tokens, from the
    module's state_dict as arrays (torch's (out, in) layout)."""

    def __init__(self, variant: V) -> None:
        self.variant = variant

    def forward(self, spec: FFNShape, weights: dict[str, Array], x: Array) -> Array:
        raise NotImplementedError

    def backward(self, spec: FFNShape, weights: dict[str, Array], x: Array, grad_out: Array) -> Gradients:
        """Given the output's gradient, the input's gradient and every parameter's, named as the
        state_dict names it (buffers, such as the sparse mask, have none)."""
        raise NotImplementedError


class SingleForm(Form[SingleFFN]):
    """One FFN's form. `prefix` is where its tensors sit in the state_dict: a mixture runs its
    expert's form once per expert, on that expert's weights (`experts.3.`)."""

    def forward(self, spec: FFNShape, weights: dict[str, Array], x: Array, prefix: str = "") -> Array:
        raise NotImplementedError

    def backward(self, spec: FFNShape, weights: dict[str, Array], x: Array, grad_out: Array, prefix: str = "") -> Gradients:
        raise NotImplementedError


class MixtureForm(Form[MixtureVariant]):
    """A mixture's form: its router and combine, each expert through the expert variant's form."""

    def expert(self, spec: FFNShape) -> SingleForm:
        form = form_of(self.variant.expert(spec))
        assert isinstance(form, SingleForm)  # an expert is one FFN, whose forms are single forms
        return form


_FORMS: dict[type[Variant], type[Form[Any]]] = {}


def reference_of(variant_class: type[Variant]) -> Callable[[F], F]:
    """Register the decorated form for `variant_class` and the subclasses without their own."""

    def register(form_class: F) -> F:
        _FORMS[variant_class] = form_class
        return form_class

    return register


def form_of(variant: Variant) -> Form[Any]:
    """The form of `variant`'s class, or of its nearest base class that has one."""
    for cls in type(variant).__mro__:
        form_class = _FORMS.get(cls)
        if form_class is not None:
            return form_class(variant)
    where = "write one in ffn_cli/reference/, decorated @reference_of(its class)"
    raise LookupError(f"no NumPy reference form computes the variant {variant.name!r}: {where}")
