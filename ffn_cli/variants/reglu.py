"""`reglu`: ReLU gate."""

from __future__ import annotations

from ffn_cli.variants.gated import GLU_FORMULA, GLU_ORIGIN, GatedVariant

__all__ = ["ReGLU"]


class ReGLU(GatedVariant):
    name = "reglu"
    activation = "relu"
    formula = GLU_FORMULA.format(act="relu")
    origin = GLU_ORIGIN
    summary = "ReLU gate"
