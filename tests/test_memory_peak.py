"""The memory preflight's estimate against the true peak: RSS growth of a real trace, measured
in a fresh process from a reset high-water mark (Linux's /proc/self/clear_refs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.run import estimate_bytes

ROOT = Path(__file__).parents[1]
CLEAR_REFS = Path("/proc/self/clear_refs")

PROBE = """
import json, sys, torch
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.run import trace

def kib(field):
    for line in open('/proc/self/status'):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

spec = FFNSpec(**json.loads(sys.argv[1]))
trace(spec, batch=1, seq_len=8, dtype=sys.argv[2])  # warm: torch's own first-use allocations
del spec
import gc; gc.collect()
spec = FFNSpec(**json.loads(sys.argv[1]))
before = kib('VmRSS:')
open('/proc/self/clear_refs', 'w').write('5')  # reset the high-water mark to the current RSS
trace(spec, batch=1, seq_len=16, dtype=sys.argv[2])
print(kib('VmHWM:') - before)
"""


def _peak_growth(spec: FFNSpec, dtype: str) -> int:
    args = [sys.executable, "-c", PROBE, json.dumps(spec.as_dict()), dtype]
    out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=ROOT)
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not CLEAR_REFS.exists(), reason="needs Linux's /proc/self/clear_refs")
@pytest.mark.parametrize(
    ("spec", "dtype"),
    [
        (FFNSpec(variant="swiglu", d_model=1024, d_ff=16384), "bfloat16"),
        pytest.param(FFNSpec(variant="relu", d_model=2048, d_ff=8192), "float32", marks=pytest.mark.slow),  # the halves were the regression
        (FFNSpec(variant="moe", d_model=512, d_ff=4096, experts=8, top_k=2), "float16"),
    ],
    ids=["swiglu-bfloat16", "relu-float32", "moe-float16"],
)
def test_the_estimate_covers_the_measured_peak(spec: FFNSpec, dtype: str) -> None:
    """A half-precision build once peaked at 2.3× its weights (a float32 copy of the whole FFN);
    weights are now drawn one linear at a time, and the estimate covers what is left."""
    growth = _peak_growth(spec, dtype)
    estimate = estimate_bytes(spec, batch=1, seq_len=16, dtype=dtype)
    assert 0 < growth <= estimate, f"peak grew {growth:,} bytes; the preflight estimated {estimate:,}"
