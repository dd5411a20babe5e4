"""`bilinear`: the GLU with no activation on the gate."""

from __future__ import annotations

from ffn_cli.variants.gated import GLU_ORIGIN, GatedVariant

__all__ = ["Bilinear"]


class Bilinear(GatedVariant):
    name = "bilinear"
    activation = "identity"
    formula = "W_down·(W_gate·x ⊙ W_up·x)"
    origin = GLU_ORIGIN
    summary = "no activation on the gate"
