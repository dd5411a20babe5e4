"""`ffn params`: parameter and FLOP accounting (never imports torch)."""

from __future__ import annotations

from rich.table import Table

from ffn_cli.accounting import active_params, flops_per_token, matmul_flops_per_token, param_formula, param_tensors, total_params
from ffn_cli.cli.common import console, emit_json, handles_errors
from ffn_cli.cli.options import (
    VARIANT_HELP,
    BiasOpt,
    CapacityFactorOpt,
    DFFOpt,
    DModelOpt,
    ExpertsOpt,
    ExpertVariantOpt,
    FfnDimMultiplierOpt,
    FusedOpt,
    JsonOpt,
    MultipleOfOpt,
    SharedExpertsOpt,
    TopKOpt,
    make_spec,
)
from ffn_cli.render.format import fmt_count, fmt_shape

import typer
from typing import Annotated


@handles_errors
def params(
    variant: Annotated[str, typer.Option("--variant", "-v", help=VARIANT_HELP)] = "relu",
    d_model: DModelOpt = 512,
    d_ff: DFFOpt = None,
    bias: BiasOpt = None,
    multiple_of: MultipleOfOpt = 256,
    ffn_dim_multiplier: FfnDimMultiplierOpt = None,
    fused: FusedOpt = False,
    experts: ExpertsOpt = 8,
    top_k: TopKOpt = 2,
    shared_experts: SharedExpertsOpt = 0,
    expert_variant: ExpertVariantOpt = "swiglu",
    capacity_factor: CapacityFactorOpt = None,
    json: JsonOpt = False,
) -> None:
    """Parameter counts per tensor and FLOPs per token of one FFN."""
    spec = make_spec(
        variant,
        d_model,
        d_ff,
        bias=bias,
        multiple_of=multiple_of,
        ffn_dim_multiplier=ffn_dim_multiplier,
        fused=fused,
        experts=experts,
        top_k=top_k,
        shared_experts=shared_experts,
        expert_variant=expert_variant,
        capacity_factor=capacity_factor,
    )
    tensors = param_tensors(spec)
    data = {
        "spec": spec.as_dict(),
        "tensors": [{"name": t.name, "shape": list(t.shape), "count": t.count} for t in tensors],
        "total_params": total_params(spec),
        "active_params": active_params(spec),
        "param_formula": param_formula(spec),
        "flops_per_token": flops_per_token(spec),
        "matmul_flops_per_token": matmul_flops_per_token(spec),
    }
    if json:
        emit_json(data)
        return
    table = Table(title=f"{spec.variant}: d_model {spec.d_model}, d_ff {spec.d_ff}")
    table.add_column("tensor")
    table.add_column("shape")
    table.add_column("count", justify="right")
    for t in tensors:
        table.add_row(t.name, fmt_shape(t.shape), fmt_count(t.count))
    table.add_row("[bold]total[/]", param_formula(spec), f"[bold]{fmt_count(data['total_params'])}[/]")
    console.print(table)
