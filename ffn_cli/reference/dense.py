"""The dense family's form: up_proj → activation → down_proj, as the tutorial writes it
(`x @ W1 + b1`, activation, `@ W2 + b2`). Subclasses change the activation step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.reference.activations import activation_form
from ffn_cli.reference.forms import SingleForm, reference_of
from ffn_cli.reference.numpy_ops import Array, Gradients, linear, linear_backward
from ffn_cli.variants.dense import DenseVariant

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["DenseForm"]


@reference_of(DenseVariant)
class DenseForm(SingleForm):
    def forward(self, spec: FFNShape, weights: dict[str, Array], x: Array, prefix: str = "") -> Array:
        h = self.activate(spec, weights, linear(x, weights, prefix + "up_proj"), prefix)
        return linear(h, weights, prefix + "down_proj")

    def activate(self, spec: FFNShape, weights: dict[str, Array], pre: Array, prefix: str) -> Array:
        return activation_form(self.variant.act()).value(pre)

    def backward(self, spec: FFNShape, weights: dict[str, Array], x: Array, grad_out: Array, prefix: str = "") -> Gradients:
        """Back through down_proj (dW_down = dyᵀ·h, dh = dy·W_down), the activation
        (dpre = dh ⊙ act′(pre)) and up_proj (dW_up = dpreᵀ·x, dx = dpre·W_up)."""
        pre = linear(x, weights, prefix + "up_proj")  # (N, d_ff)
        h = self.activate(spec, weights, pre, prefix)
        grad_h, down = linear_backward(h, grad_out, weights, prefix + "down_proj")
        grad_pre, own = self.activate_backward(spec, weights, pre, grad_h, prefix)
        grad_x, up = linear_backward(x, grad_pre, weights, prefix + "up_proj")
        return grad_x, {**up, **down, **own}

    def activate_backward(self, spec: FFNShape, weights: dict[str, Array], pre: Array, grad_h: Array, prefix: str) -> Gradients:
        """(d pre, gradients of the activation's own parameters)."""
        return grad_h * activation_form(self.variant.act()).derivative(pre), {}
