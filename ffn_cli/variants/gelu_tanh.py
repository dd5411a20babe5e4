"""`gelu_tanh`: tanh-approximated GELU, as GPT-2."""

from __future__ import annotations

from ffn_cli.i18n import N_
from ffn_cli.variants.dense import DenseVariant

__all__ = ["GELUTanh"]


class GELUTanh(DenseVariant):
    name = "gelu_tanh"
    activation = "gelu_tanh"
    formula = "W_down·gelu_tanh(W_up·x + b_up) + b_down"
    origin = N_("GPT-2 (Radford et al. 2019); Google's BERT")
    summary = "tanh-approximated GELU, as GPT-2"
