"""Run an FFN (or its block) under a recorder and report what it did, step by step.

`recorder` runs the module under a TorchDispatchMode and records every aten op with its module
path, shapes, FLOPs (`ops`) and value statistics (`stats`); `grouping` and `steps` fold those ops
into the variant's logical steps; `check` holds the output against the NumPy reference; `run`
ties it together as `trace(...)`, which returns the dataclasses of `result`.
"""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use: the result dataclasses stay importable without torch.
_HOME = {
    "CHECK_THRESHOLDS": "check",
    "CheckResult": "result",
    "MODES": "run",
    "OpRecord": "result",
    "ParamInfo": "result",
    "Recorder": "recorder",
    "Recording": "recorder",
    "TensorStats": "result",
    "TraceResult": "result",
    "TraceStep": "result",
    "check_failure": "check",
    "estimate_bytes": "run",
    "group_steps": "steps",
    "record": "recorder",
    "tensor_stats": "stats",
    "trace": "run",
}


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


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
