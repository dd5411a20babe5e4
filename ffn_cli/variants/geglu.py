"""`geglu`: tanh-GELU gate."""

from __future__ import annotations

from ffn_cli.variants.gated import GLU_FORMULA, GLU_ORIGIN, GatedVariant

__all__ = ["GEGLU"]


class GEGLU(GatedVariant):
    name = "geglu"
    activation = "gelu_tanh"
    formula = GLU_FORMULA.format(act="gelu_tanh")
    origin = GLU_ORIGIN + "; T5 v1.1, Gemma"
    summary = "tanh-GELU gate"
