"""`ffn trace --config` for a model no reader knows: its own FFN module, traced as it is.

transformers builds the model on the meta device (`models.meta_build`, never weights, never
remote code); the FFN module of the chosen layer (`model.layers.N.mlp`, …) runs once under the
same recorder as every trace. Its steps are its own submodule calls and the ops between them,
with shapes, parameters and FLOPs; meta tensors hold no values, so there are no statistics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ffn_cli.errors import FFNRuntimeError
from ffn_cli.models.attribution import is_experts
from ffn_cli.models.meta_build import build_on_meta, find_ffn_module
from ffn_cli.spec import check_int
from ffn_cli.trace.recorder import Recording, record
from ffn_cli.trace.result import Shape

__all__ = ["ForeignStep", "ForeignTrace", "trace_foreign"]


@dataclass(frozen=True)
class ForeignStep:
    """One submodule call of the FFN module, or a run of its own ops between them."""

    name: str
    operation: str
    input_shapes: tuple[Shape, ...]
    output_shape: Shape
    params: int
    matmul_flops: int
    elementwise_flops: int

    @property
    def flops(self) -> int:
        return self.matmul_flops + self.elementwise_flops


@dataclass(frozen=True)
class ForeignTrace:
    name: str
    model_type: str
    model_class: str
    layer: int
    module_path: str
    module_class: str
    input_shape: Shape
    output_shape: Shape
    steps: tuple[ForeignStep, ...]
    params: int
    notes: tuple[str, ...] = ()

    @property
    def matmul_flops(self) -> int:
        return sum(s.matmul_flops for s in self.steps)

    @property
    def elementwise_flops(self) -> int:
        return sum(s.elementwise_flops for s in self.steps)


class _FirstOutput(nn.Module):
    """The FFN module as the recorder's root; a MoE block that also returns router logits
    (a tuple) hands on its hidden states only."""

    def __init__(self, ffn: nn.Module) -> None:
        super().__init__()
        self.ffn = ffn

    def forward(self, x: Tensor) -> Tensor:
        out = self.ffn(x)
        return out[0] if isinstance(out, tuple) else out


def trace_foreign(config: Mapping[str, Any], *, name: str, source: str, layer: int | None, batch: int, seq_len: int) -> ForeignTrace:
    """Build the model on meta, find layer `layer`'s FFN module (layer 0 by default), trace it."""
    check_int("batch", batch)
    check_int("seq_len", seq_len)
    model, hf_config, notes = build_on_meta(config, source)
    found = find_ffn_module(model, 0 if layer is None else layer)
    model_type = str(config.get("model_type"))
    if found is None:
        raise FFNRuntimeError(
            f"{model_type}: layer {0 if layer is None else layer} has no single FFN module to trace (its FFN is split across "
            "modules, or the layer has none); ffn params --config counts the whole model"
        )
    routed = [path for path, sub in found.module.named_modules() if path and is_experts(path.rsplit(".", 1)[-1], type(sub).__name__)]
    if routed:
        # Meta tensors hold no values to route by: transformers' expert loops would run no expert
        # (or fail), and the FLOPs would be silently short. Refuse instead.
        raise FFNRuntimeError(
            f"{model_type}: layer {found.layer}'s FFN ({type(found.module).__name__}) routes tokens to experts by value, which "
            "the meta device does not hold; trace a dense layer (--layer), or count the model with ffn params --config"
        )
    d_model = int(hf_config.get_text_config().hidden_size)
    root = _FirstOutput(found.module)
    x = torch.empty(batch, seq_len, d_model, device="meta")
    try:
        out, rec = record(root, x, stats=False)
    except (NotImplementedError, RuntimeError) as exc:  # a meta kernel that needs values
        first = (str(exc).strip().splitlines() or [""])[0][:120]
        raise FFNRuntimeError(
            f"{model_type}: layer {found.layer}'s FFN ({type(found.module).__name__}) computes with values the meta device "
            f"does not hold (data-dependent routing: {first}); ffn params --config counts it"
        ) from None
    return ForeignTrace(
        name=name,
        model_type=model_type,
        model_class=type(model).__name__,
        layer=found.layer,
        module_path=found.path,
        module_class=type(found.module).__name__,
        input_shape=tuple(x.shape),
        output_shape=tuple(out.shape),
        steps=tuple(_steps(rec, root)),
        params=sum(p.numel() for p in found.module.parameters()),
        notes=notes,
    )


def _steps(rec: Recording, root: nn.Module) -> list[ForeignStep]:
    """The FFN module's direct submodule calls, and its own ops between them grouped by run."""
    ffn_call = next(c for c in rec.calls if c.path == "ffn")
    children = [c for c in rec.calls if c.parent == ffn_call.index]
    steps: list[ForeignStep] = []
    i = ffn_call.first_op
    own: list[int] = []
    for child in [*children, None]:
        stop = child.first_op if child is not None else ffn_call.end_op
        own += [j for j in range(i, stop) if rec.ops[j].call == ffn_call.index]
        if own:
            steps.append(_own_step(rec, own))
            own = []
        if child is None:
            break
        ops = [rec.ops[j].record for j in range(child.first_op, child.end_op)]
        module = root.get_submodule(child.path)
        steps.append(
            ForeignStep(
                name=child.path.removeprefix("ffn."),
                operation=type(module).__name__,
                input_shapes=tuple(shape for _, shape in child.sources),
                output_shape=child.output_shape,
                params=sum(p.numel() for p in module.parameters()),
                matmul_flops=sum(op.matmul_flops for op in ops),
                elementwise_flops=sum(op.elementwise_flops for op in ops),
            )
        )
        i = child.end_op
    return steps


def _own_step(rec: Recording, indices: list[int]) -> ForeignStep:
    ops = [rec.ops[j].record for j in indices]
    names = list(dict.fromkeys(op.op.removeprefix("aten.") for op in ops))
    return ForeignStep(
        name="(ops)",
        operation=", ".join(names),
        input_shapes=tuple(dict.fromkeys(shape for op in ops for shape in op.input_shapes)),
        output_shape=ops[-1].output_shapes[0],
        params=0,
        matmul_flops=sum(op.matmul_flops for op in ops),
        elementwise_flops=sum(op.elementwise_flops for op in ops),
    )
