"""Elementwise nonlinearities: their formula, FLOP convention, init gain, what backward keeps,
and their torch form (imported lazily: this module stays torch-free). Their NumPy float64
forms, the reference the torch path is held to, are `ffn_cli/reference/activations.py`."""

from __future__ import annotations

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
