"""`--check`: the traced FFN's output against the NumPy float64 reference (`ffn_cli.reference`),
an independent forward on the same weights and input."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor, nn

from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.reference import reference_forward
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.result import CheckResult, TraceResult

if TYPE_CHECKING:
    from ffn_cli.modules import FFNModule

__all__ = ["CHECK_THRESHOLDS", "RunsRegistryFFN", "check_against_reference", "check_failure", "registry_ffn"]

# Max |y − y_ref| / max |y_ref| that --check accepts, by dtype: a few units of the format's
# rounding (float16 ε ≈ 1e-3, bfloat16 ε ≈ 8e-3) after d_ff-long sums.
CHECK_THRESHOLDS = {"float64": 1e-10, "float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


def _to_numpy(t: Tensor) -> np.ndarray:
    return t.detach().to(device="cpu", dtype=torch.float64).numpy()


def _ffn_input_output(module: nn.Module, ffn: nn.Module, x: Tensor) -> tuple[Tensor, Tensor]:
    """What `ffn` inside `module` received and returned, from one more forward of the module."""
    captured: dict[str, Tensor] = {}

    def keep(_m: nn.Module, args: tuple[Any, ...], output: Tensor) -> None:
        captured["x"], captured["y"] = args[0].detach(), output.detach()

    handle = ffn.register_forward_hook(keep)
    try:
        with torch.no_grad():
            module(x)
    finally:
        handle.remove()
    return captured["x"], captured["y"]


@runtime_checkable
class RunsRegistryFFN(Protocol):
    """A module built from a spec (an FFN, or a block around one): it names the FFN it runs."""

    def registry_ffn(self) -> FFNModule: ...


def registry_ffn(module: nn.Module) -> FFNModule:
    """The FFN of the registry that `module`, built from a spec, runs."""
    assert isinstance(module, RunsRegistryFFN), "only a module built from a spec runs a registry FFN"
    return module.registry_ffn()


def check_against_reference(spec: FFNSpec, module: nn.Module, x: Tensor, out: Tensor, dtype: str) -> CheckResult:
    """Reference on the FFN's own weights and input; inside a block, the FFN's input there."""
    ffn = registry_ffn(module)
    if ffn is not module:
        x, out = _ffn_input_output(module, ffn, x)
    weights = {name: _to_numpy(t) for name, t in ffn.state_dict().items()}
    ref = reference_forward(spec, weights, _to_numpy(x))
    err = np.abs(_to_numpy(out) - ref).max()
    scale = max(float(np.abs(ref).max()), np.finfo(np.float64).tiny)
    return CheckResult(float(err / scale), CHECK_THRESHOLDS[dtype], dtype)


def check_failure(result: TraceResult) -> FFNRuntimeError | None:
    """The one-line error for a failed --check (the forward's, then the gradients'), or None."""
    c = result.check
    if c is not None and not c.passed:
        return FFNRuntimeError(
            _(
                "--check failed: max relative error {max_rel_error:.3g} exceeds {threshold:g} for {dtype} "
                "(torch vs the NumPy float64 reference)"
            ).format(max_rel_error=c.max_rel_error, threshold=c.threshold, dtype=c.dtype)
        )
    g = result.backward.check if result.backward is not None else None
    if g is not None and not g.passed:
        return FFNRuntimeError(
            _(
                "--check failed: worst relative gradient error {max_rel_error:.3g} exceeds {threshold:g} "
                "for {dtype} (torch vs the NumPy float64 backward)"
            ).format(max_rel_error=g.max_rel_error, threshold=g.threshold, dtype=g.dtype)
        )
    return None
