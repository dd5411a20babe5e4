"""Each elementwise activation in NumPy float64, and its derivative differentiated by hand:
written from the formula, not from torch, the reference the torch path is held to. Found by
the activation's name (`variants/activations.py` declares them)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ffn_cli.reference.numpy_ops import Array
from ffn_cli.variants import Activation

__all__ = ["ACTIVATION_FORMS", "ElementwiseForm", "activation_form"]


@dataclass(frozen=True)
class ElementwiseForm:
    """act(z), and d act / dz, the NumPy backward's reference."""

    value: Callable[[Array], Array]
    derivative: Callable[[Array], Array]


_erf = np.frompyfunc(math.erf, 1, 1)  # math.erf on each element (it returns objects: cast back)


def relu(z: Array) -> Array:
    return np.maximum(0.0, z)


def relu_derivative(z: Array) -> Array:
    return (z > 0).astype(np.float64)


def relu2(z: Array) -> Array:
    return np.maximum(0.0, z) ** 2


def relu2_derivative(z: Array) -> Array:
    return 2.0 * np.maximum(0.0, z)


def gelu(z: Array) -> Array:
    return 0.5 * z * (1.0 + _erf(z / math.sqrt(2.0)).astype(np.float64))


def gelu_derivative(z: Array) -> Array:
    cdf = 0.5 * (1.0 + _erf(z / math.sqrt(2.0)).astype(np.float64))
    return cdf + z * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


def gelu_tanh(z: Array) -> Array:
    return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))


def gelu_tanh_derivative(z: Array) -> Array:
    c = math.sqrt(2.0 / math.pi)
    t = np.tanh(c * (z + 0.044715 * z**3))
    return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * z * z)


def silu(z: Array) -> Array:
    return z / (1.0 + np.exp(-z))


def silu_derivative(z: Array) -> Array:
    s = 1.0 / (1.0 + np.exp(-z))
    return s * (1.0 + z * (1.0 - s))


def sigmoid(z: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-z))


def sigmoid_derivative(z: Array) -> Array:
    s = 1.0 / (1.0 + np.exp(-z))
    return s * (1.0 - s)


def identity(z: Array) -> Array:
    return z


ACTIVATION_FORMS: dict[str, ElementwiseForm] = {
    "relu": ElementwiseForm(relu, relu_derivative),
    "relu2": ElementwiseForm(relu2, relu2_derivative),
    "gelu": ElementwiseForm(gelu, gelu_derivative),
    "gelu_tanh": ElementwiseForm(gelu_tanh, gelu_tanh_derivative),
    "silu": ElementwiseForm(silu, silu_derivative),
    "sigmoid": ElementwiseForm(sigmoid, sigmoid_derivative),
    "identity": ElementwiseForm(identity, np.ones_like),
}


def activation_form(activation: Activation) -> ElementwiseForm:
    form = ACTIVATION_FORMS.get(activation.name)
    if form is None:
        raise LookupError(f"no NumPy form for the activation {activation.name!r}: add one to ffn_cli/reference/activations.py")
    return form
