"""`trace(spec, ...)`: a registry variant (or its block) traced through the one pipeline."""

from __future__ import annotations

from ffn_cli.block import BlockSpec
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.options import MODES, RunOptions
from ffn_cli.tracing.pipeline import run_target
from ffn_cli.tracing.result import TraceResult
from ffn_cli.tracing.variant_target import VariantTarget, estimate_bytes

__all__ = ["MODES", "estimate_bytes", "trace"]


def trace(
    spec: FFNSpec,
    *,
    batch: int = 2,
    seq_len: int = 5,
    device: str = "cpu",
    dtype: str = "float32",
    seed: int = 0,
    mode: str = "eval",
    values: int = 0,
    check: bool = False,
    block: BlockSpec | None = None,
    backward: bool = False,
    loss: str | None = None,
    checkpoint: bool = False,
    aten: bool = True,
) -> TraceResult:
    """Build the FFN (or its block), run it once on a random (batch, seq_len, d_model) input
    under the Recorder, and return its steps; with `backward`, then its backward from the
    output gradient `loss` makes. Refuses, before allocating, what will not fit. `aten`: record
    the aten ops (as `--ops` and `--json` list them); else the torch calls, the same steps
    without the dispatch level's start-up (`function_level`)."""
    options = RunOptions(
        batch=batch, seq_len=seq_len, device=device, dtype=dtype, seed=seed, mode=mode, values=values,
        backward=backward, loss=loss, checkpoint=checkpoint, aten=aten,
    )  # fmt: skip
    return run_target(VariantTarget(spec, block, check), options)
