"""The torch module of one FFN (dense, gated or sparse), built from its variant's layout.

Parameter names follow Hugging Face checkpoints so a real layer loads with a rename: dense
`up_proj`, `down_proj`; gated `gate_proj`, `up_proj`, `down_proj` (fused: `gate_up_proj`,
gate rows first, as Phi-3). The forward is the variant's own, run on this module's weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from ffn_cli.regions import NamedSteps, StepNaming, region
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import SingleFFN, Variant

if TYPE_CHECKING:
    from ffn_cli.variants.moe import DispatchStats

__all__ = ["FFN", "FFNModule", "ModuleWeights", "linears_in", "make_linear"]

_LINEAR_DTYPE: ContextVar[torch.dtype] = ContextVar("linear_dtype", default=torch.float32)


@contextmanager
def linears_in(dtype: torch.dtype) -> Iterator[None]:
    """While building, `make_linear` stores its weights in `dtype`."""
    token = _LINEAR_DTYPE.set(dtype)
    try:
        yield
    finally:
        _LINEAR_DTYPE.reset(token)
        release_scratch()


def make_linear(in_features: int, out_features: int, bias: bool) -> nn.Linear:
    """nn.Linear drawn in float32, so every dtype starts from the same values. In another
    dtype the draws go through one float32 scratch buffer the size of the largest linear,
    reused by every linear of the build, and are stored cast: the build never holds a float32
    copy of the FFN, nor leaves freed float32 blocks behind in the process's heap."""
    dtype = _LINEAR_DTYPE.get()
    device = torch.empty(0).device  # the device the build runs under
    if device.type == "meta":  # shapes only: the draws on meta tensors compute nothing
        return nn.Linear(in_features, out_features, bias=bias, device="meta", dtype=dtype)
    if dtype == torch.float32:
        return nn.Linear(in_features, out_features, bias=bias)
    linear = nn.Linear(in_features, out_features, bias=bias, device="meta", dtype=dtype)
    linear = linear.to_empty(device=device)
    draw = _scratch(out_features * in_features, device)[: out_features * in_features].view(out_features, in_features)
    nn.init.kaiming_uniform_(draw, a=math.sqrt(5))  # nn.Linear.reset_parameters, the same draws
    with torch.no_grad():
        linear.weight.copy_(draw)
        if linear.bias is not None:
            bound = 1 / math.sqrt(in_features) if in_features > 0 else 0
            linear.bias.copy_(draw.new_empty(out_features).uniform_(-bound, bound))
    return linear


_SCRATCH: dict[torch.device, torch.Tensor] = {}


def _scratch(numel: int, device: torch.device) -> torch.Tensor:
    buffer = _SCRATCH.get(device)
    if buffer is None or buffer.numel() < numel:
        _SCRATCH[device] = buffer = torch.empty(numel, dtype=torch.float32, device=device)
    return buffer


def release_scratch() -> None:
    """Free the float32 scratch of a finished build."""
    _SCRATCH.clear()


class ModuleWeights:
    """A built module seen through the variant's `Weights` interface: parts are called as
    submodules (so hooks see `up_proj`, `experts.3`), steps run inside named regions."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module

    def linear(self, name: str, x: Tensor) -> Tensor:
        out: Tensor = self.module.get_submodule(name)(x)
        return out

    call = linear

    def tensor(self, name: str) -> Tensor:
        owner, _, leaf = name.rpartition(".")
        t: Tensor = getattr(self.module.get_submodule(owner) if owner else self.module, leaf)
        return t

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        with region(name):
            return fn(*args)

    def dropout(self, h: Tensor) -> Tensor:
        out: Tensor = self.module.get_submodule("dropout")(h)
        return out


class FFNModule(nn.Module, NamedSteps):
    """Base: holds the spec and its variant, and optional gradient checkpointing around the forward."""

    step_naming = StepNaming.VARIANT

    def __init__(self, spec: FFNSpec, variant: Variant) -> None:
        super().__init__()
        self.spec = spec
        self.variant = variant
        self.gradient_checkpointing = False
        self.last_dispatch: DispatchStats | None = None  # what the last forward routed: a routed mixture's only

    def forward(self, x: Tensor) -> Tensor:
        if self.gradient_checkpointing and torch.is_grad_enabled():
            # Recompute the hidden activations in backward instead of keeping them.
            out: Tensor = checkpoint(self._forward, x, use_reentrant=False)
            return out
        return self._forward(x)

    def registry_ffn(self) -> FFNModule:
        """The FFN of the registry this module runs, whose input, output and gradients the
        NumPy reference checks and which gradient checkpointing wraps: this one."""
        return self

    def _forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError


class FFN(FFNModule):
    """One FFN of width d_ff (the spec's unless given: a mixture's shared experts are one FFN
    of their total width): the variant's linears, a dropout before down_proj, and the state
    the variant registers beyond them."""

    def __init__(self, spec: FFNSpec, variant: SingleFFN, d_ff: int | None = None) -> None:
        super().__init__(spec, variant)
        self.single = variant
        d_ff = spec.hidden if d_ff is None else d_ff
        dims = {"d": spec.d_model, "f": d_ff, "2f": 2 * d_ff}
        for lin in variant.linears(spec):
            setattr(self, lin.name, make_linear(dims[lin.in_dim], dims[lin.out_dim], bool(spec.bias)))
        self.dropout = nn.Dropout(spec.dropout)
        variant.register_state(self, spec, d_ff)

    def _forward(self, x: Tensor) -> Tensor:
        return self.single.forward(self.spec, ModuleWeights(self), x)
