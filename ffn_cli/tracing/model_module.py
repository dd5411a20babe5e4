"""`ffn trace --config` for a model no reader knows: transformers' own FFN module of the chosen
layer (`model.layers.N.mlp`, a MoE block), traced as any module is
(`HFModuleTarget`, a `ModuleTarget` that draws its weights once they fit).

transformers builds the model on the meta device (`models.meta_build`, never weights, never
remote code). On meta the layer's module runs as built; a MoE block, which routes tokens by
value, is refused there (its expert loop would run no expert and the FLOPs would be short). On
a real device the layer's module alone is given seeded random weights, after the memory
preflight, and runs with real routing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ffn_cli.configs.attribution import is_experts
from ffn_cli.configs.meta_build import build_on_meta, find_ffn_module
from ffn_cli.device import preflight, resolve_device_dtype
from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.tracing.any_module import ModuleTarget
from ffn_cli.tracing.pipeline import RUNTIME_BYTES, Placed, RunOptions, run_target
from ffn_cli.tracing.result import TraceResult

__all__ = ["HFModuleTarget", "model_module_target", "trace_model_module"]

DEFAULT_INIT_STD = 0.02  # transformers' initializer_range default
_ORIGIN = N_("{name} · {model_type} · layer {layer} ({cls})")  # where the traced module comes from


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


@dataclass(frozen=True, eq=False)
class HFModuleTarget(ModuleTarget):
    """transformers' FFN module of one layer, built on meta; on a real device given seeded
    N(0, std²) weights once the memory it needs is known to fit."""

    std: float = DEFAULT_INIT_STD

    def place(self, run: RunOptions) -> Placed:
        dev, dt = resolve_device_dtype(run.device or "cpu", run.dtype or "float32")
        if dev.type != "meta":
            params = sum(p.numel() for p in self.module.parameters())
            width = torch.empty((), dtype=dt).element_size()
            tokens = run.batch * run.seq_len
            # Weights in float32 while drawn, then the run's activations (a few widths of the
            # largest tensor a FFN makes, d_ff or experts × tokens at most 8·d_model per token, kept thrice).
            need = params * max(width, 4) + 3 * tokens * 8 * int(self.d_model or 0) * max(width, 4) + RUNTIME_BYTES
            preflight(need, dev, _("this trace"))
            _materialise(self.module, dev, dt, self.std, run.seed)
        return super().place(run)


def model_module_target(
    config: Mapping[str, Any], *, name: str, source: str, layer: int | None, device: str = "cpu", reference: bool = False
) -> HFModuleTarget:
    """Build the model on meta and find layer `layer`'s FFN module (layer 0 by default), to be
    traced on `device`."""
    model, hf_config, notes = build_on_meta(config, source)
    found = find_ffn_module(model, 0 if layer is None else layer)
    model_type = str(config.get("model_type"))
    if found is None:
        raise FFNRuntimeError(
            _(
                "{model_type}: layer {layer} has no single FFN module to trace (its FFN is split across "
                "modules, or the layer has none); ffn params, naming the model as here, counts it whole"
            ).format(model_type=model_type, layer=0 if layer is None else layer)
        )
    module = found.module
    text = hf_config.get_text_config()
    what = _("{model_type}: layer {layer}'s FFN ({kind})").format(model_type=model_type, layer=found.layer, kind=type(module).__name__)
    on_meta = resolve_device_dtype(device, "float32")[0].type == "meta"
    if on_meta and _routed(module):
        # Meta tensors hold no values to route by: transformers' expert loops would run no expert
        # (or fail), and the FLOPs would be silently short. Refuse instead.
        layers = int(getattr(text, "num_hidden_layers", 0) or 0)
        dense = next((i for i in range(layers) if (f := find_ffn_module(model, i)) is not None and not _routed(f.module)), None)
        if dense is None:  # DeepSeek-V4, Qwen3-MoE: every layer routes
            why = _("{what} routes tokens to experts by value, which the meta device does not hold; trace it on --device cpu "
                    "(real routing on random weights), or count the model with ffn params, naming it as here")  # fmt: skip
        else:
            why = _("{what} routes tokens to experts by value, which the meta device does not hold; trace it on --device cpu "
                    "(real routing on random weights), trace a dense layer (--layer {dense}), or count the model with ffn "
                    "params, naming it as here")  # fmt: skip
        raise FFNRuntimeError(why.format(what=what, dense=dense))
    std = float(getattr(text, "initializer_range", DEFAULT_INIT_STD) or DEFAULT_INIT_STD)
    if on_meta:
        described = (*notes, N_("built on the meta device: shapes and FLOPs, no values"))
    else:  # a dense FFN has no routing to follow its weights
        drawn = (
            N_("weights: seeded random N(0, {std}²), not a checkpoint's; the routing follows them")
            if _routed(module)
            else N_("weights: seeded random N(0, {std}²), not a checkpoint's")
        )
        described = (*notes, Message(drawn, std=f"{std:g}"))
    return HFModuleTarget(
        module,
        d_model=int(text.hidden_size),
        d_model_from=Message(N_("the config's hidden_size")),
        reference=reference,
        source="transformers",
        name=found.path,
        origin=Message(_ORIGIN, name=name, model_type=model_type, layer=found.layer, cls=type(model).__name__),
        notes=described,
        std=std,
    )


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
    reference: bool = False,
    **options: Any,
) -> TraceResult:
    """Layer `layer`'s FFN module of the model traced on `device`; `options` as for
    `trace_module` (mode, values, depth, backward, …)."""
    run = RunOptions(batch=batch, seq_len=seq_len, device=device, dtype=dtype, seed=seed, **options)
    target = model_module_target(config, name=name, source=source, layer=layer, device=device, reference=reference)
    return run_target(target, run)
