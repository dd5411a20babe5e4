"""`glu`: sigmoid gate."""

from __future__ import annotations

from ffn_cli.variants.gated import GLU_FORMULA, GLU_ORIGIN, GatedVariant

__all__ = ["GLU"]


class GLU(GatedVariant):
    name = "glu"
    activation = "sigmoid"
    formula = GLU_FORMULA.format(act="σ")
    origin = "Dauphin et al. 2017; " + GLU_ORIGIN
    summary = "sigmoid gate"
