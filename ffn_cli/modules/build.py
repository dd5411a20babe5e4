"""`build_ffn(spec)`: the module of any registry variant, on cpu / cuda / meta, in any dtype.

Weights are drawn in float32 from the seed, in construction order, so every dtype starts from
the same values; a half-precision build draws one linear at a time in float32 and keeps only
its cast, so the build never holds a float32 copy of the whole FFN.
"""

from __future__ import annotations

import functools
import importlib
import itertools
from typing import TYPE_CHECKING

import torch
from torch import nn

from ffn_cli.device_name import RUN_DTYPES, check_run_dtype
from ffn_cli.modules.ffn import FFNModule, linears_in
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import FFNSpec

if TYPE_CHECKING:
    from ffn_cli.variants.activations import InitGain

__all__ = ["DTYPES", "apply_init", "build_ffn", "module_class", "resolve_dtype"]

DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in RUN_DTYPES}


def resolve_dtype(name: str) -> torch.dtype:
    return DTYPES[check_run_dtype(name)]


def _init_linear(linear: nn.Linear, spec: FFNSpec, gain_name: InitGain) -> None:
    weight = torch.empty(linear.weight.shape, device=linear.weight.device)  # float32: the same draws in any dtype
    if spec.init == "xavier_normal":
        nn.init.xavier_normal_(weight, gain=nn.init.calculate_gain(gain_name))
    elif spec.init == "kaiming_normal":
        nn.init.kaiming_normal_(weight, nonlinearity="relu" if gain_name == "relu" else "linear")
    elif spec.init == "normal":
        nn.init.normal_(weight, mean=0.0, std=0.02)
    with torch.no_grad():
        linear.weight.copy_(weight)
        if linear.bias is not None:
            linear.bias.zero_()


def apply_init(module: nn.Module, spec: FFNSpec) -> None:
    """Apply spec.init to every projection: layers feeding the activation get its gain, the
    others a linear gain; zero_init_output zeroes down_proj (as GPT-style residual init)."""
    if spec.init == "default" and not spec.zero_init_output:
        return  # torch's own init stands: no need to walk every module (thousands of experts)
    feeding = {lin.name for lin in spec.ffn_variant.linears(spec) if lin.feeds_activation}
    gain = spec.ffn_variant.act().init_gain
    for name, sub in module.named_modules():
        if not isinstance(sub, nn.Linear):
            continue
        leaf = name.rsplit(".", 1)[-1]
        if spec.init != "default":
            _init_linear(sub, spec, gain if leaf in feeding else "linear")
        if spec.zero_init_output and leaf == "down_proj":
            nn.init.zeros_(sub.weight)
            if sub.bias is not None:
                nn.init.zeros_(sub.bias)


@functools.cache
def module_class(reference: str) -> type[FFNModule]:
    """The class a variant's `torch_module` names, "package.module:Class", imported on first use."""
    module_name, _, class_name = reference.partition(":")
    cls: type[FFNModule] = getattr(importlib.import_module(module_name), class_name)
    return cls


def build_ffn(spec: FFNSpec, *, device: str | torch.device = "cpu", dtype: torch.dtype | str = torch.float32, seed: int = 0) -> FFNModule:
    """Build the module for `spec` on `device` (cpu, cuda, cuda:N or meta) in `dtype`.

    Weights are drawn from `seed`'s weights stream, so two builds of one spec on one device are identical.
    """
    if isinstance(dtype, str):
        dtype = resolve_dtype(dtype)
    device = torch.device(device)
    torch.manual_seed(stream_seed(seed, Stream.WEIGHTS))
    linear_dtype = torch.float32 if device.type == "meta" else dtype
    with torch.device(device), linears_in(linear_dtype):
        module = module_class(spec.info.torch_module)(spec, spec.info)
        apply_init(module, spec)
    # The small rest (masks, scalar parameters) moves; a module already all in place is not
    # walked again (thousands of experts on meta).
    tensors = itertools.chain(module.parameters(), module.buffers())
    if any(t.device != device or (t.is_floating_point() and t.dtype != dtype) for t in tensors):
        module = module.to(device=device, dtype=dtype)
    return module
