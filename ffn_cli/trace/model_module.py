"""`ffn trace --config` for a model no reader knows: transformers' own FFN module of the chosen
layer (`model.layers.N.mlp`, a MoE block), traced through `trace_module` like any module.

transformers builds the model on the meta device (`models.meta_build`, never weights, never
remote code). On meta the layer's module runs as built; a MoE block, which routes tokens by
value, is refused there (its expert loop would run no expert and the FLOPs would be short). On
a real device the layer's module alone is given seeded random weights, after the memory
preflight, and runs with real routing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ffn_cli.device import preflight, resolve_device_dtype
from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import N_, _
from ffn_cli.models.attribution import is_experts
from ffn_cli.models.meta_build import build_on_meta, find_ffn_module
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import check_int
from ffn_cli.trace.any_module import trace_module
from ffn_cli.trace.result import TraceResult
from ffn_cli.trace.run import RUNTIME_BYTES

__all__ = ["trace_model_module"]

DEFAULT_INIT_STD = 0.02  # transformers' initializer_range default


def _routed(module: nn.Module) -> bool:
    return any(path and is_experts(path.rsplit(".", 1)[-1], type(sub).__name__) for path, sub in module.named_modules())


def _materialise(module: nn.Module, device: torch.device, dtype: torch.dtype, std: float, seed: int) -> None:
    """Real storage for a meta-built module: parameters drawn from N(0, std²) with a seeded
    generator (in float32, as `build_ffn` draws), buffers zero."""
    module.to_empty(device=device)
    generator = torch.Generator(device="cpu").manual_seed(stream_seed(seed, Stream.WEIGHTS))
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float32) * std)
        for b in module.buffers():
            b.zero_()
    module.to(dtype=dtype)


def trace_model_module(
    config: Mapping[str, Any],
    *,
    name: str,
    source: str,
    layer: int | None,
    batch: int,
    seq_len: int,
    device: str = "cpu",
    dtype: str = "float32",
    seed: int = 0,
    **options: Any,
) -> TraceResult:
    """Build the model on meta, find layer `layer`'s FFN module (layer 0 by default), trace it
    on `device`; `options` as for `trace_module` (mode, values, depth, backward, …)."""
    check_int("batch", batch)
    check_int("seq_len", seq_len)
    model, hf_config, notes = build_on_meta(config, source)
    found = find_ffn_module(model, 0 if layer is None else layer)
    model_type = str(config.get("model_type"))
    if found is None:
        raise FFNRuntimeError(
            _(
                "{model_type}: layer {layer} has no single FFN module to trace (its FFN is split across "
                "modules, or the layer has none); ffn params --config counts the whole model"
            ).format(model_type=model_type, layer=0 if layer is None else layer)
        )
    module = found.module
    text = hf_config.get_text_config()
    d_model = int(text.hidden_size)
    dev, dt = resolve_device_dtype(device, dtype)
    what = _("{model_type}: layer {layer}'s FFN ({kind})").format(model_type=model_type, layer=found.layer, kind=type(module).__name__)
    if dev.type == "meta" and _routed(module):
        # Meta tensors hold no values to route by: transformers' expert loops would run no expert
        # (or fail), and the FLOPs would be silently short. Refuse instead.
        raise FFNRuntimeError(
            _(
                "{what} routes tokens to experts by value, which the meta device does not hold; trace it "
                "on --device cpu (real routing on random weights), trace a dense layer (--layer), or count "
                "the model with ffn params --config"
            ).format(what=what)
        )
    described = (*notes,)
    if dev.type != "meta":
        params = sum(p.numel() for p in module.parameters())
        width = torch.empty((), dtype=dt).element_size()
        tokens = batch * seq_len
        # Weights in float32 while drawn, then the run's activations (a few widths of the
        # largest tensor a FFN makes, d_ff or experts × tokens at most 8·d_model per token, kept thrice).
        need = params * max(width, 4) + 3 * tokens * 8 * d_model * max(width, 4) + RUNTIME_BYTES
        preflight(need, dev, _("this trace"))
        std = float(getattr(text, "initializer_range", DEFAULT_INIT_STD) or DEFAULT_INIT_STD)
        _materialise(module, dev, dt, std, seed)
        described += (f"weights: seeded random N(0, {std:g}²), not a checkpoint's; the routing follows them",)
    else:
        described += (N_("built on the meta device: shapes and FLOPs, no values"),)
    return trace_module(
        module,
        batch=batch,
        seq_len=seq_len,
        d_model=d_model,
        d_model_from="the config's hidden_size",
        device=str(dev),
        dtype=str(dt).removeprefix("torch."),
        seed=seed,
        source="transformers",
        name=found.path,
        origin=f"{name} · {model_type} · layer {found.layer} ({type(model).__name__})",
        notes=described,
        **options,
    )
