"""`silu`: SiLU / Swish, ungated."""

from __future__ import annotations

from ffn_cli.variants.dense import DenseVariant

__all__ = ["SiLU"]


class SiLU(DenseVariant):
    name = "silu"
    activation = "silu"
    formula = "W_down·silu(W_up·x + b_up) + b_down"
    origin = "Elfwing et al. 2018; Ramachandran et al. 2017 (Swish)"
    summary = "SiLU / Swish, ungated"
