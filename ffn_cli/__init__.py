"""ffn: see what a Transformer's feed-forward network does, from shapes to FLOPs to speed.

`import ffn_cli` stays light: `build_ffn` (and torch with it) loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS

if TYPE_CHECKING:
    from ffn_cli.modules import build_ffn

__all__ = ["VARIANTS", "FFNError", "FFNRuntimeError", "FFNSpec", "__version__", "build_ffn"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "build_ffn":
        from ffn_cli.modules import build_ffn

        return build_ffn
    raise AttributeError(f"module 'ffn_cli' has no attribute {name!r}")
