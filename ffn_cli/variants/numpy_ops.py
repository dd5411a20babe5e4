"""The few NumPy float64 building blocks the variants' reference forwards share.

Weights come as the module's state_dict converted to arrays, in torch's (out, in) layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["linear", "sigmoid", "softmax"]

Array = Any


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
