"""`relu`: the original Transformer FFN."""

from __future__ import annotations

from ffn_cli.variants.dense import DenseVariant

__all__ = ["ReLU"]


class ReLU(DenseVariant):
    name = "relu"
    activation = "relu"
    formula = "W_down·relu(W_up·x + b_up) + b_down"
    origin = "Vaswani et al. 2017, Attention Is All You Need"
    summary = "the original Transformer FFN"
