"""The gated (GLU) family's form: down_proj(act(gate) ⊙ up), gate and up from two projections
or from the fused `gate_up_proj` (gate rows first). Subclasses change the combine."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ffn_cli.reference.activations import activation_form
from ffn_cli.reference.forms import SingleForm, reference_of
from ffn_cli.reference.numpy_ops import Array, Gradients, linear, linear_backward
from ffn_cli.variants.gated import GatedVariant

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["GatedForm"]


@reference_of(GatedVariant)
class GatedForm(SingleForm):
    def forward(self, spec: FFNShape, weights: dict[str, Array], x: Array, prefix: str = "") -> Array:
        gate, up = self.gate_up(spec, weights, x, prefix)
        return linear(self.combine(gate, up), weights, prefix + "down_proj")

    def gate_up(self, spec: FFNShape, weights: dict[str, Array], x: Array, prefix: str) -> tuple[Array, Array]:
        if spec.fused_gate_up:
            gate_up = linear(x, weights, prefix + "gate_up_proj")
            half = gate_up.shape[-1] // 2
            return gate_up[..., :half], gate_up[..., half:]
        return linear(x, weights, prefix + "gate_proj"), linear(x, weights, prefix + "up_proj")

    def combine(self, gate: Array, up: Array) -> Array:
        return activation_form(self.variant.act()).value(gate) * up

    def backward(self, spec: FFNShape, weights: dict[str, Array], x: Array, grad_out: Array, prefix: str = "") -> Gradients:
        """Back through down_proj, the gate multiply (each operand's gradient is dh times the
        other operand) and the two projections, whose input gradients add up at x."""
        gate, up = self.gate_up(spec, weights, x, prefix)
        grad_h, down = linear_backward(self.combine(gate, up), grad_out, weights, prefix + "down_proj")
        grad_gate, grad_up = self.combine_backward(gate, up, grad_h)
        if spec.fused_gate_up:
            grad_x, proj = linear_backward(x, np.concatenate([grad_gate, grad_up], axis=-1), weights, prefix + "gate_up_proj")
            return grad_x, {**proj, **down}
        grad_x_gate, gate_grads = linear_backward(x, grad_gate, weights, prefix + "gate_proj")
        grad_x_up, up_grads = linear_backward(x, grad_up, weights, prefix + "up_proj")
        return grad_x_gate + grad_x_up, {**gate_grads, **up_grads, **down}

    def combine_backward(self, gate: Array, up: Array, grad_h: Array) -> tuple[Array, Array]:
        """h = act(gate) ⊙ up: d gate = dh ⊙ up ⊙ act′(gate), d up = dh ⊙ act(gate)."""
        act = activation_form(self.variant.act())
        return grad_h * up * act.derivative(gate), grad_h * act.value(gate)
