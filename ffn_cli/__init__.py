"""ffn: see what a Transformer's feed-forward network does, from shapes to FLOPs to speed.

`import ffn_cli` stays light: `build_ffn` (and torch with it) loads on first use.

    import ffn_cli
    r = ffn_cli.trace(my_module)          # any nn.Module, an FFNSpec, a preset, "FILE.py:NAME(args)"
    rich.print(r); r.to_dict()            # the table ffn trace prints; its --json
    ffn_cli.params("llama-2-7b")          # no torch
    ffn_cli.bench(ffn_cli.FFNSpec("swiglu", 512), seq_len=[128, 512])  # the ffn bench timings
    ffn_cli.set_language("zh")            # 中文 (default: FFN_LANG, else the locale)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import set_language

if TYPE_CHECKING:
    from ffn_cli.modules import build_ffn
    from ffn_cli.spec import FFNSpec
    from ffn_cli.variants import VARIANTS

__all__ = [
    "VARIANTS",
    "FFNError",
    "FFNRuntimeError",
    "FFNSpec",
    "Result",
    "__version__",
    "bench",
    "build_ffn",
    "params",
    "set_language",
    "trace",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The registry loads on first use, like the rest: `ffn hardware` never needs it.
    if name == "FFNSpec":
        from ffn_cli.spec import FFNSpec

        return FFNSpec
    if name == "VARIANTS":
        from ffn_cli.variants import VARIANTS

        return VARIANTS
    if name == "build_ffn":
        from ffn_cli.modules import build_ffn

        return build_ffn
    if name in ("trace", "bench", "params", "Result"):
        from ffn_cli import api

        return getattr(api, name)
    raise AttributeError(f"module 'ffn_cli' has no attribute {name!r}")
