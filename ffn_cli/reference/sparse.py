"""`sparse`'s form: the dense form with its fixed mask over the hidden units."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.reference.activations import activation_form
from ffn_cli.reference.dense import DenseForm
from ffn_cli.reference.forms import reference_of
from ffn_cli.reference.numpy_ops import Array, Gradients
from ffn_cli.variants.sparse import Sparse

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["SparseForm"]


@reference_of(Sparse)
class SparseForm(DenseForm):
    def activate(self, spec: FFNShape, weights: dict[str, Array], pre: Array, prefix: str) -> Array:
        return activation_form(self.variant.act()).value(pre) * weights[prefix + "hidden_mask"]

    def activate_backward(self, spec: FFNShape, weights: dict[str, Array], pre: Array, grad_h: Array, prefix: str) -> Gradients:
        """The mask multiplies the gradient as it multiplied the activation: masked units learn nothing."""
        return grad_h * weights[prefix + "hidden_mask"] * activation_form(self.variant.act()).derivative(pre), {}
