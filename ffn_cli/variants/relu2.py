"""`relu2`: Primer's squared ReLU."""

from __future__ import annotations

from ffn_cli.variants.dense import DenseVariant

__all__ = ["ReLUSquared"]


class ReLUSquared(DenseVariant):
    name = "relu2"
    activation = "relu2"
    formula = "W_down·relu(W_up·x + b_up)² + b_down"
    origin = "So et al. 2021, Primer"
    summary = "Primer's squared ReLU"
