"""The few NumPy float64 building blocks the reference forms share.

Weights come as the module's state_dict converted to arrays, in torch's (out, in) layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["Array", "Gradients", "linear", "linear_backward", "sigmoid", "softmax", "softmax_backward"]

Array = Any
# What a NumPy backward returns: the input's gradient, and each parameter's by its state_dict name.
Gradients = tuple[Array, dict[str, Array]]


def linear(x: Array, w: Mapping[str, Array], name: str) -> Array:
    """x·Wᵀ + b, as the tutorial writes it (`x @ W1 + b1`, with W1 = Wᵀ)."""
    out = x @ np.asarray(w[f"{name}.weight"], dtype=np.float64).T
    bias = w.get(f"{name}.bias")
    return out if bias is None else out + np.asarray(bias, dtype=np.float64)


def sigmoid(z: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-z))


def softmax(z: Array) -> Array:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def linear_backward(x: Array, grad_out: Array, w: Mapping[str, Array], name: str) -> Gradients:
    """y = x·Wᵀ + b on (N, in) rows: dW = dyᵀ·x, db = Σ_rows dy, dx = dy·W."""
    grads = {f"{name}.weight": grad_out.T @ x}
    if f"{name}.bias" in w:
        grads[f"{name}.bias"] = grad_out.sum(axis=0)
    return grad_out @ np.asarray(w[f"{name}.weight"], dtype=np.float64), grads


def softmax_backward(p: Array, grad_p: Array) -> Array:
    """p = softmax(z) over the last axis: dz = p ⊙ (dp − Σ dp ⊙ p)."""
    return p * (grad_p - (grad_p * p).sum(axis=-1, keepdims=True))
