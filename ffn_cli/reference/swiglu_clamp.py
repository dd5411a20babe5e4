"""`swiglu_clamp`'s form: the gated form with gpt-oss's clamps, sharper sigmoid and +1."""

from __future__ import annotations

import numpy as np

from ffn_cli.reference.forms import reference_of
from ffn_cli.reference.gated import GatedForm
from ffn_cli.reference.numpy_ops import Array
from ffn_cli.variants.swiglu_clamp import ALPHA, LIMIT, SwiGLUClamp

__all__ = ["SwiGLUClampForm"]


@reference_of(SwiGLUClamp)
class SwiGLUClampForm(GatedForm):
    def combine(self, gate: Array, up: Array) -> Array:
        g = np.minimum(gate, LIMIT)
        u = np.clip(up, -LIMIT, LIMIT)
        return (u + 1.0) * g / (1.0 + np.exp(-ALPHA * g))

    def combine_backward(self, gate: Array, up: Array, grad_h: Array) -> tuple[Array, Array]:
        """h = (u + 1)·g·σ(αg): d g = dh·(u + 1)·(σ + αg·σ·(1 − σ)), d u = dh·g·σ; each clamp
        passes the gradient only where it left its input unchanged (torch's bounds inclusive)."""
        g = np.minimum(gate, LIMIT)
        u = np.clip(up, -LIMIT, LIMIT)
        s = 1.0 / (1.0 + np.exp(-ALPHA * g))
        grad_g = grad_h * (u + 1.0) * (s + ALPHA * g * s * (1.0 - s))
        grad_u = grad_h * g * s
        return grad_g * (gate <= LIMIT), grad_u * ((up >= -LIMIT) & (up <= LIMIT))
