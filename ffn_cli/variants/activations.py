"""Elementwise nonlinearities: their formula, FLOP convention, init gain, what backward keeps,
and their torch and NumPy float64 forms (imported lazily: this module stays torch-free)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ACTIVATIONS", "Activation", "InitGain"]

# The torch.nn.init.calculate_gain names an activation's init can ask for.
InitGain = Literal["linear", "relu", "sigmoid", "tanh"]


@dataclass(frozen=True)
class Activation:
    """An elementwise nonlinearity, with the conventions the accounting and init need."""

    name: str
    formula: str
    # Arithmetic operations per element, our labelled convention for elementwise FLOPs.
    flops_per_element: int
    # torch.nn.init.calculate_gain name used by xavier_normal for layers feeding this activation.
    init_gain: InitGain
    # Whether autograd keeps the activation's input for backward (gelu, silu), rather than only
    # its output (relu, sigmoid) or nothing (identity). relu² keeps relu's output and squares
    # it into a new tensor, which costs the same as keeping the input.
    saves_input: bool

    @property
    def runs_an_op(self) -> bool:
        return self.name != "identity"

    def torch(self, z: Any) -> Any:
        import torch.nn.functional as F

        if self.name == "relu":
            return F.relu(z)
        if self.name == "relu2":
            return F.relu(z).square()
        if self.name in ("gelu", "gelu_tanh"):
            return F.gelu(z, approximate="tanh" if self.name == "gelu_tanh" else "none")
        if self.name == "silu":
            return F.silu(z)
        if self.name == "sigmoid":
            return z.sigmoid()
        return z

    def numpy(self, z: Any) -> Any:
        """Written from the formula, not from torch: the reference the torch path is held to."""
        import numpy as np

        if self.name == "relu":
            return np.maximum(0.0, z)
        if self.name == "relu2":
            return np.maximum(0.0, z) ** 2
        if self.name == "gelu":
            erf = np.frompyfunc(math.erf, 1, 1)
            return 0.5 * z * (1.0 + erf(z / math.sqrt(2.0)).astype(np.float64))
        if self.name == "gelu_tanh":
            return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))
        if self.name == "silu":
            return z / (1.0 + np.exp(-z))
        if self.name == "sigmoid":
            return 1.0 / (1.0 + np.exp(-z))
        return z

    def numpy_derivative(self, z: Any) -> Any:
        """d act / dz, differentiated by hand from the formula (the NumPy backward's reference)."""
        import numpy as np

        if self.name == "relu":
            return (z > 0).astype(np.float64)
        if self.name == "relu2":
            return 2.0 * np.maximum(0.0, z)
        if self.name == "gelu":
            erf = np.frompyfunc(math.erf, 1, 1)
            cdf = 0.5 * (1.0 + erf(z / math.sqrt(2.0)).astype(np.float64))
            return cdf + z * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        if self.name == "gelu_tanh":
            c = math.sqrt(2.0 / math.pi)
            t = np.tanh(c * (z + 0.044715 * z**3))
            return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * z * z)
        if self.name == "silu":
            s = 1.0 / (1.0 + np.exp(-z))
            return s * (1.0 + z * (1.0 - s))
        if self.name == "sigmoid":
            s = 1.0 / (1.0 + np.exp(-z))
            return s * (1.0 - s)
        return np.ones_like(z)


ACTIVATIONS: dict[str, Activation] = {
    a.name: a
    for a in (
        Activation("relu", "max(0, z)", 1, "relu", saves_input=False),
        Activation("relu2", "max(0, z)²", 2, "relu", saves_input=True),
        Activation("gelu", "z·Φ(z), Φ by erf", 8, "relu", saves_input=True),
        Activation("gelu_tanh", "0.5·z·(1 + tanh(√(2/π)·(z + 0.044715·z³)))", 9, "relu", saves_input=True),
        Activation("silu", "z·σ(z)", 5, "relu", saves_input=True),
        Activation("sigmoid", "σ(z) = 1/(1 + e^(−z))", 4, "sigmoid", saves_input=False),
        Activation("identity", "z", 0, "linear", saves_input=False),
    )
}
