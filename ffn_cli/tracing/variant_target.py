"""A registry variant, or its Transformer block, as a trace target: sized against what torch can
hold and the memory there is before anything is built, built from its spec, grouped by its
regions, held to the NumPy float64 reference with `--check`."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ffn_cli.accounting import DTYPE_BYTES, activation_bytes, activation_elements_per_token, param_tensors, total_params
from ffn_cli.block import BlockSpec, build_block
from ffn_cli.device import preflight, resolve_device_dtype
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.modules import build_ffn
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.backward_run import run_backward
from ffn_cli.tracing.check import check_against_reference
from ffn_cli.tracing.gc_pause import gc_paused
from ffn_cli.tracing.pipeline import RUNTIME_BYTES, Placed, Recorded, RunOptions, make_input
from ffn_cli.tracing.recorder import dtype_name, record
from ffn_cli.tracing.result import TracedModule
from ffn_cli.tracing.steps import group_steps

__all__ = ["VariantTarget", "estimate_bytes"]

# A tensor's byte size must fit in int64 (torch checks numel × 8 bytes for float64), meta included.
MAX_TENSOR_ELEMENTS = 1 << 60


def _largest_tensor_elements(spec: FFNSpec, block: BlockSpec | None, batch: int, seq_len: int) -> int:
    """Elements of the widest activation: tokens × (d_model, 2·d_ff, shared d_ff, E), and a block's
    attention scores (B·H, T, T)."""
    tokens = batch * seq_len
    largest = tokens * max(spec.d_model, 2 * spec.hidden, spec.shared_hidden, spec.experts)
    if block is not None:
        a = block.attention
        largest = max(largest, tokens * max(a.q_dim, a.kv_dim), batch * int(a.n_heads or 1) * seq_len * seq_len)
    return largest


def estimate_bytes(spec: FFNSpec, *, batch: int, seq_len: int, dtype: str, block: BlockSpec | None = None, check: bool = False) -> int:
    """Peak bytes a trace allocates: weights; outside float32, the float32 scratch the largest
    linear is drawn in (`modules.ffn.make_linear`); activations ×3 (autograd keeps them, the
    recorder keeps every intermediate alive, statistics make float32 copies); and the working
    space of the math libraries and the allocator (RUNTIME_BYTES, measured a few MiB)."""
    width = DTYPE_BYTES[dtype]
    tokens = batch * seq_len
    params = total_params(spec)
    elements = tokens * (activation_elements_per_token(spec) + 2 * spec.d_model)
    if block is not None:
        a = block.attention
        params += a.params + 4 * spec.d_model
        elements += tokens * (2 * a.q_dim + 2 * a.kv_dim + 4 * spec.d_model) + 2 * batch * int(a.n_heads or 1) * seq_len * seq_len
    needed = params * width + 3 * elements * max(width, 4) + RUNTIME_BYTES
    if dtype != "float32":
        needed += 4 * max(t.count for t in param_tensors(spec))
    if check:
        needed += 8 * (total_params(spec) + 2 * elements)
    return needed


@dataclass(frozen=True)
class VariantTarget:
    """`spec` as the registry builds it, inside `block` when one is given; `check`: held to the
    NumPy float64 reference on the same weights and input."""

    spec: FFNSpec
    block: BlockSpec | None = None
    check: bool = False

    def running(self) -> nullcontext[None]:
        return nullcontext()  # ffn's own code: nothing to contain

    def place(self, run: RunOptions) -> Placed:
        self._validate(run)
        dev, dt = resolve_device_dtype(run.device or "cpu", run.dtype or "float32")
        if dev.type != "meta":
            need = estimate_bytes(self.spec, batch=run.batch, seq_len=run.seq_len, dtype=dtype_name(dt), block=self.block, check=self.check)
            preflight(need * (2 if run.backward else 1), dev, _("this trace"))  # backward: a gradient beside each tensor
        module: nn.Module = (
            build_block(self.block, device=dev, dtype=dt, seed=run.seed)
            if self.block
            else build_ffn(self.spec, device=dev, dtype=dt, seed=run.seed)
        )
        x = make_input((run.batch, run.seq_len, self.spec.d_model), dev, dt, run.seed)
        return Placed(module, x, dev, self.spec.d_model, "the spec")

    def _validate(self, run: RunOptions) -> None:
        """Refuse what this spec cannot run as asked, naming the option, before anything is built."""
        spec, block = self.spec, self.block
        if self.check and (run.device or "cpu").strip().lower() == "meta":
            raise FFNError("check", True, _("needs values; use --device cpu or cuda (meta tensors hold none)"))
        if block is not None and block.ffn != spec:
            raise FFNError("block", "BlockSpec", _("must wrap the spec being traced (BlockSpec.around(spec))"))
        if self.check and run.mode == "train" and spec.dropout > 0:
            raise FFNError("mode", run.mode, _("--check compares with a deterministic reference: use --mode eval or --dropout 0"))
        largest = _largest_tensor_elements(spec, block, run.batch, run.seq_len)
        if largest > MAX_TENSOR_ELEMENTS:
            allowed = _(
                "with --batch {batch} the largest tensor would hold {largest:,} elements, more than torch can size; use smaller sizes"
            ).format(batch=run.batch, largest=largest)
            raise FFNError("seq_len", run.seq_len, allowed)

    def record(self, placed: Placed, run: RunOptions) -> Recorded:
        if run.backward:
            kept = torch.get_rng_state()
            out, rec, steps, backward = run_backward(
                self.spec,
                placed.module,
                placed.x,
                loss=run.loss_name,
                seed=run.seed,
                values=run.values,
                checkpoint=run.checkpoint,
                check=self.check,
                dtype=placed.dtype,
            )
            torch.set_rng_state(kept)  # the forward check's own forward draws the same masks as the traced one
            return Recorded(out, rec, steps, backward)
        with gc_paused():
            out, rec = record(placed.module, placed.x, values=run.values, aten=run.aten)
            return Recorded(out, rec, group_steps(rec), None)

    def identity(self, placed: Placed) -> TracedModule:
        origin = "" if self.block is None else "in a Transformer block"
        return TracedModule("variant", self.spec.variant, type(placed.module).__name__, self.spec.d_model, "the spec", origin)

    def findings(self, placed: Placed, recorded: Recorded, run: RunOptions) -> dict[str, Any]:
        spec, x = self.spec, placed.x
        check = check_against_reference(spec, placed.module, x, recorded.out, placed.dtype) if self.check else None
        return {
            "spec": spec,
            "block": self.block,
            "activation_bytes_estimate": activation_bytes(spec, run.batch * run.seq_len, placed.dtype),
            "check": check,
        }
