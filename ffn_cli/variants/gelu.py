"""`gelu`: exact erf GELU, as BERT in Hugging Face."""

from __future__ import annotations

from ffn_cli.variants.dense import DenseVariant

__all__ = ["GELU"]


class GELU(DenseVariant):
    name = "gelu"
    activation = "gelu"
    formula = "W_down·gelu(W_up·x + b_up) + b_down"
    origin = "Hendrycks & Gimpel 2016; BERT (Devlin et al. 2019)"
    summary = "exact erf GELU, as BERT in Hugging Face"
