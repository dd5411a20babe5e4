"""`moe`'s form: softmax router, top-k choice (renormalised when the spec says so), capacity
drops in token order, each expert through its variant's form (in a latent, through a down and
an up projection, where the spec has one), shared experts behind an optional sigmoid gate."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ffn_cli.reference.forms import MixtureForm, reference_of
from ffn_cli.reference.numpy_ops import Array, Gradients, linear, linear_backward, sigmoid, softmax, softmax_backward
from ffn_cli.variants.moe import LATENT_DOWN, LATENT_UP, RoutedMoE

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["RoutedMoEForm"]


@reference_of(RoutedMoE)
class RoutedMoEForm(MixtureForm):
    def forward(self, spec: FFNShape, weights: dict[str, Array], x: Array) -> Array:
        expert = self.expert(spec)
        probs = softmax(linear(x, weights, "router"))  # (N, E)
        chosen, gates = self.route(spec, probs)
        inner = linear(x, weights, LATENT_DOWN) if spec.latent else x  # what the experts read
        out = np.zeros_like(inner)
        for e, (rows, slots) in enumerate(self.rows(spec, chosen)):
            if rows.size:
                out[rows] += gates[rows, slots][:, None] * expert.forward(spec, weights, inner[rows], f"experts.{e}.")
        if spec.latent:
            out = linear(out, weights, LATENT_UP)
        if self.variant.shared_hidden(spec):
            shared = expert.forward(spec, weights, x, "shared_experts.")
            if spec.shared_expert_gate:
                shared = sigmoid(linear(x, weights, "shared_expert_gate")) * shared
            out = out + shared
        return out

    def route(self, spec: FFNShape, probs: Array) -> tuple[Array, Array]:
        """(chosen experts (N, k), their weights (N, k), renormalised when the spec says so)."""
        chosen = np.argsort(-probs, axis=-1, kind="stable")[:, : spec.top_k]  # (N, k)
        gates = np.take_along_axis(probs, chosen, axis=-1)
        if spec.normalize_top_k:
            gates = gates / gates.sum(axis=-1, keepdims=True)
        return chosen, gates

    def rows(self, spec: FFNShape, chosen: Array) -> list[tuple[Array, Array]]:
        """Each expert's (token rows, slots) in token order, cut at the capacity."""
        n = chosen.shape[0]
        capacity = None if spec.capacity_factor is None else math.ceil(spec.capacity_factor * n * spec.top_k / spec.experts)
        pairs = []
        for e in range(spec.experts):
            rows, slots = np.nonzero(chosen == e)  # row-major: token order
            pairs.append((rows[:capacity], slots[:capacity]) if capacity is not None else (rows, slots))
        return pairs

    def backward(self, spec: FFNShape, weights: dict[str, Array], x: Array, grad_out: Array) -> Gradients:
        """Each expert gets its rows of dy scaled by their gate weights, and scatters its input
        gradient back to those rows; each gate weight's gradient is dy·y_expert, which flows back
        through the renormalisation and the softmax into the router. The top-k choice itself
        has no gradient; a row dropped over capacity gets none from the expert it missed. In a
        latent, the experts' gradient comes back through the up projection and leaves through
        the down one."""
        expert = self.expert(spec)
        probs = softmax(linear(x, weights, "router"))  # (N, E)
        chosen, gates = self.route(spec, probs)
        grads: dict[str, Array] = {}
        inner, grad_routed = x, grad_out
        if spec.latent:
            inner = linear(x, weights, LATENT_DOWN)
            combined = np.zeros_like(inner)
            for e, (rows, slots) in enumerate(self.rows(spec, chosen)):
                if rows.size:
                    combined[rows] += gates[rows, slots][:, None] * expert.forward(spec, weights, inner[rows], f"experts.{e}.")
            grad_routed, up = linear_backward(combined, grad_out, weights, LATENT_UP)
            grads.update(up)
        grad_inner = np.zeros_like(inner)
        grad_gates = np.zeros_like(gates)  # (N, k)
        for e, (rows, slots) in enumerate(self.rows(spec, chosen)):
            prefix = f"experts.{e}."
            if not rows.size:  # an expert no token reached learns nothing
                grads.update({t.name: np.zeros(t.shape) for t in expert.variant.tensors(spec.expert_shape(), spec.hidden, prefix)})
                continue
            grad_gates[rows, slots] = (grad_routed[rows] * expert.forward(spec, weights, inner[rows], prefix)).sum(axis=-1)
            grad_rows, own = expert.backward(spec, weights, inner[rows], gates[rows, slots][:, None] * grad_routed[rows], prefix)
            np.add.at(grad_inner, rows, grad_rows)
            grads.update(own)
        grad_x = grad_inner
        if spec.latent:
            grad_x, down = linear_backward(x, grad_inner, weights, LATENT_DOWN)
            grads.update(down)
        if spec.normalize_top_k:  # ĝ = g / Σg: dg = (dĝ − Σ dĝ ⊙ ĝ) / Σg
            picked = np.take_along_axis(probs, chosen, axis=-1)
            grad_gates = (grad_gates - (grad_gates * gates).sum(axis=-1, keepdims=True)) / picked.sum(axis=-1, keepdims=True)
        grad_probs = np.zeros_like(probs)
        np.put_along_axis(grad_probs, chosen, grad_gates, axis=-1)
        grad_router_x, router = linear_backward(x, softmax_backward(probs, grad_probs), weights, "router")
        grad_x += grad_router_x
        grads.update(router)
        if self.variant.shared_hidden(spec):
            grad_shared = grad_out
            if spec.shared_expert_gate:  # out += σ(z)·shared, z = x·w_g
                z = linear(x, weights, "shared_expert_gate")
                shared = expert.forward(spec, weights, x, "shared_experts.")
                grad_z = (grad_out * shared).sum(axis=-1, keepdims=True) * sigmoid(z) * (1.0 - sigmoid(z))
                grad_gate_x, gate = linear_backward(x, grad_z, weights, "shared_expert_gate")
                grad_x += grad_gate_x
                grads.update(gate)
                grad_shared = sigmoid(z) * grad_out
            grad_shared_x, shared_grads = expert.backward(spec, weights, x, grad_shared, "shared_experts.")
            grad_x += grad_shared_x
            grads.update(shared_grads)
        return grad_x, grads
