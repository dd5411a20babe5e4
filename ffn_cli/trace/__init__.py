"""Run an FFN (or its block) under a recorder and report what it did, step by step.

`recorder` runs the module under a TorchDispatchMode and records every aten op with its module
path, shapes, FLOPs (`ops`) and value statistics (`stats`); `grouping` and `steps` fold those ops
into the variant's logical steps; `check` holds the output against the NumPy reference; `run`
ties it together as `trace(...)`, which returns the dataclasses of `result`.
"""

from __future__ import annotations

from ffn_cli.trace.check import CHECK_THRESHOLDS, check_failure
from ffn_cli.trace.recorder import Recorder, Recording, record
from ffn_cli.trace.result import CheckResult, OpRecord, ParamInfo, TensorStats, TraceResult, TraceStep
from ffn_cli.trace.run import MODES, estimate_bytes, trace
from ffn_cli.trace.stats import tensor_stats
from ffn_cli.trace.steps import group_steps

__all__ = [
    "CHECK_THRESHOLDS",
    "MODES",
    "CheckResult",
    "OpRecord",
    "ParamInfo",
    "Recorder",
    "Recording",
    "TensorStats",
    "TraceResult",
    "TraceStep",
    "check_failure",
    "estimate_bytes",
    "group_steps",
    "record",
    "tensor_stats",
    "trace",
]
