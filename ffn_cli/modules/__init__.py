"""PyTorch modules for every registry variant, built from an FFNSpec by its variant object.

Every forward uses functional ops only and runs each step in a named region, so a
dispatch-level recorder sees and labels each step.
"""

from __future__ import annotations

from ffn_cli.modules.build import DTYPES, apply_init, build_ffn, resolve_dtype
from ffn_cli.modules.ffn import FFN, FFNModule, ModuleWeights
from ffn_cli.modules.mixture import DispatchStats, MoEFFN, SoftMoEFFN

__all__ = [
    "DTYPES",
    "FFN",
    "DispatchStats",
    "FFNModule",
    "MoEFFN",
    "ModuleWeights",
    "SoftMoEFFN",
    "apply_init",
    "build_ffn",
    "resolve_dtype",
]
