"""`soft_moe`'s form: every expert on every token, weighted by the router's softmax."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ffn_cli.reference.forms import MixtureForm, reference_of
from ffn_cli.reference.numpy_ops import Array, Gradients, linear, linear_backward, softmax, softmax_backward
from ffn_cli.variants.soft_moe import SoftMoE

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["SoftMoEForm"]


@reference_of(SoftMoE)
class SoftMoEForm(MixtureForm):
    def forward(self, spec: FFNShape, weights: dict[str, Array], x: Array) -> Array:
        expert = self.expert(spec)
        gates = softmax(linear(x, weights, "router"))  # (N, E)
        return sum(gates[:, e : e + 1] * expert.forward(spec, weights, x, f"experts.{e}.") for e in range(spec.experts))

    def backward(self, spec: FFNShape, weights: dict[str, Array], x: Array, grad_out: Array) -> Gradients:
        """Every expert gets dy scaled by its gate column; each gate's gradient is dy·y_expert,
        which flows back through the softmax into the router."""
        expert = self.expert(spec)
        gates = softmax(linear(x, weights, "router"))  # (N, E)
        grad_x, grads = np.zeros_like(x), {}
        grad_gates = np.zeros_like(gates)
        for e in range(spec.experts):
            prefix = f"experts.{e}."
            grad_gates[:, e] = (grad_out * expert.forward(spec, weights, x, prefix)).sum(axis=-1)
            grad_expert_x, own = expert.backward(spec, weights, x, gates[:, e : e + 1] * grad_out, prefix)
            grad_x += grad_expert_x
            grads.update(own)
        grad_router_x, router = linear_backward(x, softmax_backward(gates, grad_gates), weights, "router")
        return grad_x + grad_router_x, {**router, **grads}
