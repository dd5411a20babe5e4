"""`xielu`'s form: the dense form with xIELU and its two learnable scalars (α_p, α_n, stored
raw: each is a softplus of its parameter)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ffn_cli.reference.dense import DenseForm
from ffn_cli.reference.forms import reference_of
from ffn_cli.reference.numpy_ops import Array, Gradients, sigmoid
from ffn_cli.variants.xielu import BETA, EPS, XIELU

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["XIELUForm"]


@reference_of(XIELU)
class XIELUForm(DenseForm):
    def activate(self, spec: FFNShape, weights: dict[str, Array], pre: Array, prefix: str) -> Array:
        alpha_p = np.log1p(np.exp(weights[prefix + "act_fn.alpha_p"]))
        alpha_n = BETA + np.log1p(np.exp(weights[prefix + "act_fn.alpha_n"]))
        negative = (np.expm1(np.minimum(pre, EPS)) - pre) * alpha_n + BETA * pre
        return np.where(pre > 0, alpha_p * pre * pre + BETA * pre, negative)

    def activate_backward(self, spec: FFNShape, weights: dict[str, Array], pre: Array, grad_h: Array, prefix: str) -> Gradients:
        """z > 0: d/dz = 2·α_p·z + β, d/dα_p = z²; else d/dz = (e^z·[z ≤ ε] − 1)·α_n + β,
        d/dα_n = expm1(min(z, ε)) − z; each α is a softplus of its raw scalar, whose slope is σ."""
        raw_p, raw_n = weights[prefix + "act_fn.alpha_p"], weights[prefix + "act_fn.alpha_n"]
        alpha_p, alpha_n = np.log1p(np.exp(raw_p)), BETA + np.log1p(np.exp(raw_n))
        positive = pre > 0
        slope_e = np.where(pre <= EPS, np.exp(np.minimum(pre, EPS)), 0.0)
        dz = np.where(positive, 2.0 * alpha_p * pre + BETA, (slope_e - 1.0) * alpha_n + BETA)
        d_alpha_p = np.where(positive, pre * pre, 0.0)
        d_alpha_n = np.where(positive, 0.0, np.expm1(np.minimum(pre, EPS)) - pre)
        own = {
            prefix + "act_fn.alpha_p": (grad_h * d_alpha_p).sum(keepdims=True).reshape(1) * sigmoid(raw_p),
            prefix + "act_fn.alpha_n": (grad_h * d_alpha_n).sum(keepdims=True).reshape(1) * sigmoid(raw_n),
        }
        return grad_h * dz, own
