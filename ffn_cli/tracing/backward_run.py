"""`ffn trace --backward`: the output gradient the chosen loss makes, the recorded backward
folded into steps, the memory it peaks at, and its check against the NumPy backward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint as checkpointed

from ffn_cli.reference import reference_backward
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.backward import record_backward
from ffn_cli.tracing.backward_steps import fold_backward
from ffn_cli.tracing.check import CHECK_THRESHOLDS, registry_ffn
from ffn_cli.tracing.gradient_seed import gradient_seed
from ffn_cli.tracing.memory import measure_backward_memory
from ffn_cli.tracing.recorder import Recording
from ffn_cli.tracing.result import BackwardResult, CheckResult, TraceStep

__all__ = ["check_backward", "output_grad_maker", "run_backward"]


def _seeded_normal(like: Tensor, seed: int, stream: Stream) -> Tensor:
    if like.is_meta:
        return torch.empty_like(like)
    generator = torch.Generator(device=like.device).manual_seed(stream_seed(seed, stream))
    return torch.randn(like.shape, generator=generator, device=like.device, dtype=torch.float32).to(like.dtype)


def output_grad_maker(loss: str, seed: int) -> Callable[[Tensor], Tensor]:
    """dL/dy for the output y: a seeded standard normal; L = Σy → 1; L = mean((y − t)²) with
    a seeded standard-normal target t → 2·(y − t)/numel. dL/dy and t draw from streams of their
    own, independent of the input's and the weights'."""

    def make(y: Tensor) -> Tensor:
        if loss == "sum":
            return torch.ones_like(y)
        if loss == "mse":
            return 2.0 * (y - _seeded_normal(y, seed, Stream.TARGET)) / y.numel()
        return _seeded_normal(y, seed, Stream.OUTPUT_GRAD)

    return make


def _checkpointed(module: nn.Module, on: bool) -> None:
    registry_ffn(module).gradient_checkpointing = on


def run_backward(
    spec: FFNSpec | None,
    module: nn.Module,
    x: Tensor,
    *,
    loss: str,
    seed: int,
    values: int,
    checkpoint: bool,
    check: bool,
    dtype: str,
    depth: int = 1,
) -> tuple[Tensor, Recording, list[TraceStep], BackwardResult]:
    """Forward and backward under one recorder: (output, the forward's recording and steps, the
    backward). A module with no spec (not built here) is checkpointed whole, its steps grouped
    by its structure (`depth`), and has no NumPy backward to check against."""
    make_grad = output_grad_maker(loss, seed)
    call = None if spec is not None else _whole_module_call(module, checkpoint)
    if spec is not None:
        _checkpointed(module, checkpoint)
    out, rec = record_backward(module, x, make_grad, values=values, checkpointed=checkpoint, functions=spec is None, depth=depth, call=call)
    steps, params = fold_backward(rec)
    module.zero_grad(set_to_none=True)
    memory = measure_backward_memory(module, x, make_grad, call)
    saved = {storage: read.bytes_ for reads in rec.reads.values() for storage, read in reads}
    result = BackwardResult(
        loss=loss,
        steps=tuple(steps),
        params=tuple(params),
        output_grad=rec.output_grad,
        input_grad=rec.input_grad[1],
        checkpoint=checkpoint,
        saved_bytes=sum(saved.values()),
        peak_bytes=memory.peak_bytes,
        start_bytes=memory.start_bytes,
        check=check_backward(spec, module, x, make_grad, dtype) if check and spec is not None else None,
    )
    if spec is not None:
        _checkpointed(module, False)
    return out, rec.forward, rec.steps, result


def _whole_module_call(module: nn.Module, checkpoint: bool) -> Callable[[Tensor], Any]:
    """module(x)'s output, as it returned it; with `checkpoint`, under torch.utils.checkpoint (the backward
    recomputes the whole module's activations)."""

    if checkpoint:
        return lambda x: checkpointed(module, x, use_reentrant=False)
    return lambda x: module(x)  # a tuple's flowing tensor is picked by the recorder


def _to_numpy(t: Tensor) -> np.ndarray:
    return t.detach().to(device="cpu", dtype=torch.float64).numpy()


def check_backward(spec: FFNSpec, module: nn.Module, x: Tensor, make_grad: Callable[[Tensor], Tensor], dtype: str) -> CheckResult:
    """The FFN's input and parameter gradients against the NumPy backward, on its own weights,
    input and output gradient (inside a block: what reached the FFN there); the worst relative
    error over dL/dx and every parameter."""
    ffn = registry_ffn(module)
    seen: dict[str, Tensor] = {}

    def forward_hook(_m: nn.Module, args: tuple[Any, ...], _out: Tensor) -> None:
        seen["x"] = args[0].detach()

    def backward_hook(_m: nn.Module, grad_in: Any, grad_out: Any) -> None:
        seen["dx"], seen["dy"] = grad_in[0].detach(), grad_out[0].detach()

    handles = [ffn.register_forward_hook(forward_hook), ffn.register_full_backward_hook(backward_hook)]
    module.zero_grad(set_to_none=True)
    try:
        with torch.enable_grad():
            out = module(x.detach().requires_grad_(True))
            gradient_seed(out, make_grad(out.detach())).backward()
    finally:
        for handle in handles:
            handle.remove()
    weights = {name: _to_numpy(t) for name, t in ffn.state_dict().items()}
    grad_x, grads = reference_backward(spec, weights, _to_numpy(seen["x"]), _to_numpy(seen["dy"]))
    pairs = [(_to_numpy(seen["dx"]), grad_x)]
    for name, p in ffn.named_parameters():
        pairs.append((np.zeros(p.shape) if p.grad is None else _to_numpy(p.grad), grads[name]))
    module.zero_grad(set_to_none=True)
    worst = max(float(np.abs(a - e).max() / max(float(np.abs(e).max()), np.finfo(np.float64).tiny)) for a, e in pairs)
    return CheckResult(worst, CHECK_THRESHOLDS[dtype], dtype)
