"""ffn: see what a Transformer's feed-forward network does, from shapes to FLOPs to speed.

`import ffn_cli` stays light: `build_ffn` (and torch with it) loads on first use.

    import ffn_cli
    r = ffn_cli.trace(my_module)          # any nn.Module, an FFNSpec, a preset, "FILE.py:NAME(args)"
    rich.print(r); r.to_dict()            # the table ffn trace prints; its --json
    ffn_cli.params("llama-2-7b")          # no torch: a Result[ModelParams]
    ffn_cli.compare(["llama-2-7b", "mistral-7b"])  # models side by side
    ffn_cli.bench(ffn_cli.FFNSpec("swiglu", 512), seq_len=[128, 512])  # the ffn bench timings
    ffn_cli.set_language("zh")            # 中文 (default: FFN_LANG, else the locale)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import set_language

if TYPE_CHECKING:
    from ffn_cli.api import (
        Cache,
        ComparedModel,
        Loss,
        Mode,
        Phase,
        Result,
        bench,
        bench_sharded,
        compare,
        params,
        params_per_rank,
        trace,
    )
    from ffn_cli.benchmark.result import BenchReport
    from ffn_cli.models.built import BuiltModel
    from ffn_cli.models.count import ModelParams
    from ffn_cli.models.layer import FFNReport
    from ffn_cli.modules import build_ffn
    from ffn_cli.parallel.accounting import RankParams
    from ffn_cli.parallel.result import ParallelTiming
    from ffn_cli.spec import FFNSpec
    from ffn_cli.tracing.result import TraceResult
    from ffn_cli.variants import VARIANTS

__all__ = [
    "VARIANTS",
    "BenchReport",
    "BuiltModel",
    "Cache",
    "ComparedModel",
    "FFNError",
    "FFNReport",
    "FFNRuntimeError",
    "FFNSpec",
    "Loss",
    "Mode",
    "ModelParams",
    "ParallelTiming",
    "Phase",
    "RankParams",
    "Result",
    "TraceResult",
    "__version__",
    "bench",
    "bench_sharded",
    "build_ffn",
    "compare",
    "params",
    "params_per_rank",
    "set_language",
    "trace",
]
# The result types, by the module that defines each: loaded on first use, torch with the ones that need it.
_RESULT_TYPES = {
    "BenchReport": "ffn_cli.benchmark.result",
    "BuiltModel": "ffn_cli.models.built",
    "FFNReport": "ffn_cli.models.layer",
    "ModelParams": "ffn_cli.models.count",
    "ParallelTiming": "ffn_cli.parallel.result",
    "RankParams": "ffn_cli.parallel.accounting",
    "TraceResult": "ffn_cli.tracing.result",
}
_API = (
    "Cache",
    "ComparedModel",
    "Loss",
    "Mode",
    "Phase",
    "Result",
    "bench",
    "bench_sharded",
    "compare",
    "params",
    "params_per_rank",
    "trace",
)
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
    if name in _API:
        from ffn_cli import api

        return getattr(api, name)
    if name in _RESULT_TYPES:
        import importlib

        return getattr(importlib.import_module(_RESULT_TYPES[name]), name)
    raise AttributeError(f"module 'ffn_cli' has no attribute {name!r}")
