"""`swiglu`: SiLU gate, LLaMA's FFN."""

from __future__ import annotations

from ffn_cli.variants.gated import GLU_FORMULA, GLU_ORIGIN, GatedVariant

__all__ = ["SwiGLU"]


class SwiGLU(GatedVariant):
    name = "swiglu"
    activation = "silu"
    formula = GLU_FORMULA.format(act="silu")
    origin = GLU_ORIGIN + "; PaLM, LLaMA"
    summary = "SiLU gate, LLaMA's FFN"
