"""ffn: see what a Transformer's feed-forward network does, from shapes to FLOPs to speed.

`import ffn_cli` never imports torch: `build_ffn` imports it when it builds a module.

    import ffn_cli
    r = ffn_cli.trace(my_module)          # any nn.Module, an FFNSpec, a preset, "FILE.py:NAME(args)"
    rich.print(r); r.to_dict()            # the table ffn trace prints; its --json
    ffn_cli.params("llama-2-7b")          # no torch
    ffn_cli.bench(ffn_cli.FFNSpec("swiglu", 512), seq_len=[128, 512])  # the ffn bench timings
    ffn_cli.set_language("zh")            # 中文 (default: FFN_LANG, else the locale)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"  # first: the command line's modules read it as they load

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import set_language
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS

if TYPE_CHECKING:
    import torch

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
    from ffn_cli.configs.built import BuiltModel
    from ffn_cli.models.count import ModelParams
    from ffn_cli.models.layer import FFNReport
    from ffn_cli.modules import FFNModule
    from ffn_cli.parallel.accounting import RankParams
    from ffn_cli.parallel.result import ParallelTiming
    from ffn_cli.tracing.result import TraceResult

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

# The API and its result types, each from the module that defines it, imported when first
# named: the command line imports this package too, and never the API (`ffn params` of one FFN
# reads no model code, no service it does not run), so api.py imports what it calls at its top.
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
_LAZY = {name: "ffn_cli.api" for name in _API} | {
    "BenchReport": "ffn_cli.benchmark.result",
    "BuiltModel": "ffn_cli.configs.built",
    "FFNReport": "ffn_cli.models.layer",
    "ModelParams": "ffn_cli.models.count",
    "ParallelTiming": "ffn_cli.parallel.result",
    "RankParams": "ffn_cli.parallel.accounting",
    "TraceResult": "ffn_cli.tracing.result",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # once: the next look-up is a plain attribute
        return value
    raise AttributeError(f"module 'ffn_cli' has no attribute {name!r}")


def build_ffn(spec: FFNSpec, *, device: str | torch.device = "cpu", dtype: torch.dtype | str = "float32", seed: int = 0) -> FFNModule:
    """The torch module of `spec` on `device` (cpu, cuda, cuda:N or meta) in `dtype`, its
    weights drawn from `seed` (`ffn_cli.modules.build_ffn`). Torch loads here, when a module is
    built: the package itself never imports it."""
    from ffn_cli.modules import build_ffn as build

    return build(spec, device=device, dtype=dtype, seed=seed)
