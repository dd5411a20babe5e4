"""The registry's table: each variant's name and where its class is, loaded when first looked
up (`registry.Registry`). A variant that asks the registry (a gated variant's form without its
activation, a mixture's expert) imports this table, never the package."""

from __future__ import annotations

from ffn_cli.variants.registry import Registry

__all__ = ["VARIANTS"]

# name → its class; the order is `ffn variants`', the CLI's and the docs'.
VARIANTS = Registry(
    {
        "relu": "ffn_cli.variants.relu:ReLU",
        "gelu": "ffn_cli.variants.gelu:GELU",
        "gelu_tanh": "ffn_cli.variants.gelu_tanh:GELUTanh",
        "silu": "ffn_cli.variants.silu:SiLU",
        "relu2": "ffn_cli.variants.relu2:ReLUSquared",
        "xielu": "ffn_cli.variants.xielu:XIELU",
        "glu": "ffn_cli.variants.glu:GLU",
        "bilinear": "ffn_cli.variants.bilinear:Bilinear",
        "reglu": "ffn_cli.variants.reglu:ReGLU",
        "geglu": "ffn_cli.variants.geglu:GEGLU",
        "swiglu": "ffn_cli.variants.swiglu:SwiGLU",
        "swiglu_clamp": "ffn_cli.variants.swiglu_clamp:SwiGLUClamp",
        "moe": "ffn_cli.variants.moe:RoutedMoE",
        "soft_moe": "ffn_cli.variants.soft_moe:SoftMoE",
        "sparse": "ffn_cli.variants.sparse:Sparse",
    }
)
