"""`trace(...)`: validate the options, refuse what will not fit, build the FFN (or its block),
run it once under the recorder and assemble the TraceResult."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ffn_cli.accounting import DTYPE_BYTES, activation_bytes, activation_elements_per_token, param_tensors, total_params
from ffn_cli.block import BlockSpec, build_block
from ffn_cli.device import preflight, resolve_device_dtype
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.modules import build_ffn
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import FFNSpec, check_int
from ffn_cli.trace.check import check_against_reference
from ffn_cli.trace.gc_pause import gc_paused
from ffn_cli.trace.recorder import dtype_name, record
from ffn_cli.trace.result import Shape, TracedModule, TraceResult
from ffn_cli.trace.steps import group_steps

__all__ = ["MODES", "estimate_bytes", "trace"]

MODES = ("eval", "train")
MAX_VALUES = 64
# BLAS packing buffers, thread workspaces and allocator slack a first run of new shapes adds.
RUNTIME_BYTES = 32 * 2**20
# A tensor's byte size must fit in int64 (torch checks numel × 8 bytes for float64), meta included.
MAX_TENSOR_ELEMENTS = 1 << 60


def _validate_options(
    spec: FFNSpec, block: BlockSpec | None, *, batch: int, seq_len: int, seed: int, mode: str, values: int, check: bool, device: str
) -> None:
    """Refuse a bad option before anything is built, naming it."""
    check_int("batch", batch)
    check_int("seq_len", seq_len)
    check_int("seed", seed, minimum=0, maximum=2**63 - 1)  # as bench and --tp: torch seeds are 64-bit
    if mode not in MODES:
        raise FFNError("mode", mode, _("choose one of {modes}").format(modes=", ".join(MODES)))
    check_int("values", values, minimum=0, maximum=MAX_VALUES)
    if check and device.strip().lower() == "meta":
        raise FFNError("check", True, _("needs values; use --device cpu or cuda (meta tensors hold none)"))
    if block is not None and block.ffn != spec:
        raise FFNError("block", "BlockSpec", _("must wrap the spec being traced (BlockSpec.around(spec))"))
    if check and mode == "train" and spec.dropout > 0:
        raise FFNError("mode", mode, _("--check compares with a deterministic reference: use --mode eval or --dropout 0"))
    largest = _largest_tensor_elements(spec, block, batch, seq_len)
    if largest > MAX_TENSOR_ELEMENTS:
        allowed = _(
            "with --batch {batch} the largest tensor would hold {largest:,} elements, more than torch can size; use smaller sizes"
        ).format(batch=batch, largest=largest)
        raise FFNError("seq_len", seq_len, allowed)


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


def _make_input(shape: Shape, device: torch.device, dtype: torch.dtype, seed: int) -> Tensor:
    """A seeded standard-normal input, drawn in float32 so every dtype starts from the same values."""
    if device.type == "meta":
        return torch.empty(shape, device=device, dtype=dtype)
    generator = torch.Generator(device=device).manual_seed(stream_seed(seed, Stream.INPUT))
    return torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)


def _param_groups(module: nn.Module) -> tuple[tuple[str, int], ...]:
    """Parameter counts by top-level part (up_proj, experts, attn, …), in registration order."""
    groups: dict[str, int] = {}
    for name, p in module.named_parameters():
        top = name.split(".", 1)[0]
        groups[top] = groups.get(top, 0) + p.numel()
    return tuple(groups.items())


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
    _validate_options(spec, block, batch=batch, seq_len=seq_len, seed=seed, mode=mode, values=values, check=check, device=device)
    loss_name = _validate_backward(backward, loss, checkpoint)
    dev, dt = resolve_device_dtype(device, dtype)
    canonical_dtype = dtype_name(dt)
    if dev.type != "meta":
        need = estimate_bytes(spec, batch=batch, seq_len=seq_len, dtype=canonical_dtype, block=block, check=check)
        preflight(need * (2 if backward else 1), dev, _("this trace"))  # backward: a gradient beside each tensor
    module: nn.Module = build_block(block, device=dev, dtype=dt, seed=seed) if block else build_ffn(spec, device=dev, dtype=dt, seed=seed)
    module.train(mode == "train")
    x = _make_input((batch, seq_len, spec.d_model), dev, dt, seed)
    torch.manual_seed(stream_seed(seed, Stream.DROPOUT))  # dropout masks in train mode
    backward_result = None
    if backward:
        from ffn_cli.trace.backward_run import run_backward

        kept = torch.get_rng_state()
        out, rec, steps, backward_result = run_backward(
            spec, module, x, loss=loss_name, seed=seed, values=values, checkpoint=checkpoint, check=check, dtype=canonical_dtype
        )
        torch.set_rng_state(kept)  # the forward check's own forward draws the same masks as the traced one
    else:
        with gc_paused():
            out, rec = record(module, x, values=values, aten=aten)
            steps = group_steps(rec)
    origin = "" if block is None else "in a Transformer block"
    return TraceResult(
        module=TracedModule("variant", spec.variant, type(module).__name__, spec.d_model, "the spec", origin),
        spec=spec,
        block=block,
        batch=batch,
        seq_len=seq_len,
        device=str(dev),
        dtype=canonical_dtype,
        mode=mode,
        seed=seed,
        input_shape=tuple(x.shape),
        output_shape=tuple(out.shape),
        input_stats=rec.input_stats,
        input_values=rec.input_values,
        steps=tuple(steps),
        ops=tuple(op.record for op in rec.ops),
        param_groups=_param_groups(module),
        saved_bytes=rec.saved_bytes,
        activation_bytes_estimate=activation_bytes(spec, batch * seq_len, canonical_dtype),
        check=check_against_reference(spec, module, x, out, canonical_dtype) if check else None,
        backward=backward_result,
    )


def _validate_backward(backward: bool, loss: str | None, checkpoint: bool) -> str:
    """The loss's name; --loss and --checkpoint only mean something for a backward."""
    if not backward and loss is not None:
        raise FFNError("loss", loss, _("shapes the output gradient of a backward: add --backward"))
    if not backward and checkpoint:
        raise FFNError("checkpoint", True, _("recomputes activations during a backward: add --backward"))
    if loss is None:
        return "random"
    from ffn_cli.trace.result import LOSSES

    name = loss.strip().lower()
    if name not in LOSSES:
        raise FFNError("loss", loss, _("choose one of {losses}").format(losses=", ".join(LOSSES)))
    return name
