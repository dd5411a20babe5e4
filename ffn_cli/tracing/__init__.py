"""Run an FFN (or its block) under a recorder and report what it did, step by step.

`recorder` runs the module under a TorchDispatchMode and records every aten op with its module
path, shapes, FLOPs (`ops`) and value statistics (`stats`); `grouping` and `steps` fold those ops
into the variant's logical steps; `check` holds the output against the NumPy reference; `run`
ties it together as `trace(...)`, which returns the dataclasses of `result`.

The package's surface is what needs no torch (the renderers read it): the result dataclasses
and the run's options. What runs a module imports torch and is imported from its module
(`ffn_cli.tracing.run.trace`, `ffn_cli.tracing.recorder.record`, …).
"""

from __future__ import annotations

from ffn_cli.tracing.options import MODES, RunOptions
from ffn_cli.tracing.result import CheckResult, OpRecord, ParamInfo, TensorStats, TraceResult, TraceStep

__all__ = ["MODES", "CheckResult", "OpRecord", "ParamInfo", "RunOptions", "TensorStats", "TraceResult", "TraceStep"]
