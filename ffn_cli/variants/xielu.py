"""`xielu`: the xIELU activation (Huang & Schlag 2024; Apertus 2025) in a dense FFN.

xIELU(z) = α_p·z² + β·z for z > 0, else α_n·(expm1(min(z, ε)) − z) + β·z, with α_p =
softplus(a_p) and α_n = β + softplus(a_n) learnable (one scalar each per FFN, as Apertus's
`act_fn.alpha_p` / `act_fn.alpha_n`), β = 0.5 and ε = −1e-6 fixed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ffn_cli.i18n import N_
from ffn_cli.variants.activations import Activation
from ffn_cli.variants.base import SavedTensor, SplitKind, TensorTemplate, Weights, Width
from ffn_cli.variants.dense import DenseVariant

if TYPE_CHECKING:
    from torch import nn

    from ffn_cli.variants.shape import FFNShape

__all__ = ["XIELU"]

ALPHA_P_INIT = 0.8
ALPHA_N_INIT = 0.8
BETA = 0.5
EPS = -1e-6
# expm1, sub, mul, mul, add on the negative side; mul, add, mul on the positive: comparisons count 0.
XIELU_ACTIVATION = Activation("xielu", "α_p·z² + β·z if z > 0, else α_n·(e^min(z, ε) − 1 − z) + β·z", 8, "relu", saves_input=True)


def inverse_softplus(y: float) -> float:
    """The raw parameter whose softplus is y."""
    return math.log(math.expm1(y))


def _xielu(z: Any, raw_alpha_p: Any, raw_alpha_n: Any) -> Any:
    import torch.nn.functional as F

    alpha_p, alpha_n = F.softplus(raw_alpha_p), F.softplus(raw_alpha_n)  # (1,) each, once per forward
    e = z.clamp(max=EPS).expm1()
    negative = (e - z) * alpha_n + BETA * e  # = (e − z)·(β + α_n) + β·z
    positive = z * (alpha_p * z + BETA)
    return positive.where(z > 0, negative)


class XIELU(DenseVariant):
    name = "xielu"
    activation = XIELU_ACTIVATION.name
    formula = N_("W_down·xielu(W_up·x),  xielu with learnable α_p, α_n")
    origin = "Huang & Schlag 2024, Deriving Activation Functions Using Integration; Apertus 2025"
    summary = "xIELU, two learnable scalars, as Apertus"
    default_bias = False  # Apertus's MLP has none

    def act(self) -> Activation:
        return XIELU_ACTIVATION

    def extra_templates(self, spec: FFNShape) -> tuple[TensorTemplate, ...]:
        # Scalars of the whole FFN, not per hidden unit: every tensor-parallel rank needs them.
        return (
            TensorTemplate("act_fn.alpha_p", ("1",), split=SplitKind.REPLICATED),
            TensorTemplate("act_fn.alpha_n", ("1",), split=SplitKind.REPLICATED),
        )

    def register_state(self, module: nn.Module, spec: FFNShape, d_ff: int) -> None:
        """`act_fn` holding the raw α_p, α_n, shaped (1,) as Apertus's checkpoints store them,
        at the values whose softplus gives the initial α_p and α_n − β."""
        import torch
        from torch import nn

        act_fn = nn.Module()
        for name, alpha in (("alpha_p", inverse_softplus(ALPHA_P_INIT)), ("alpha_n", inverse_softplus(ALPHA_N_INIT - BETA))):
            act_fn.register_parameter(name, nn.Parameter(torch.tensor([alpha], dtype=torch.float32)))
        module.act_fn = act_fn

    def activate(self, spec: FFNShape, w: Weights, pre: Any) -> Any:
        return w.step("activation", _xielu, pre, w.tensor("act_fn.alpha_p"), w.tensor("act_fn.alpha_n"))

    def saved(self, spec: FFNShape, d_ff: int) -> list[SavedTensor]:
        """The pre-activation, expm1's output, e − z, α_p·z + β, the sign mask (bool), the
        output h; and once per forward the two softplus'd scalars."""
        kept = [SavedTensor("x", spec.d_model), SavedTensor("pre-activation", d_ff)]
        kept += [SavedTensor(n, d_ff) for n in ("expm1(min(z, ε))", "e − z", "α_p·z + β", "h")]
        return [*kept, SavedTensor("z > 0", d_ff, Width.MASK), SavedTensor("α_p, α_n", 0, fixed=2)]

    def step_formula(self, spec: FFNShape, step: str) -> str:
        if step == "activation":
            return "xielu(h): α_p·h² + β·h if h > 0, else α_n·(expm1(h) − h) + β·h"
        return super().step_formula(spec, step)
