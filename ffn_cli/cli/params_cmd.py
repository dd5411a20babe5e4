"""`ffn params`: parameters, FLOPs and memory of one FFN beside its attention, of variants side
by side, or of a whole model from its config.json. Pure Python: it never imports torch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from ffn_cli.cli.common import console, emit_json, handles_errors, refuse_unused
from ffn_cli.cli.complete import complete_dtypes, complete_presets, complete_variants
from ffn_cli.cli.options import (
    AttnBiasOpt,
    BiasOpt,
    CapacityFactorOpt,
    DFFOpt,
    DModelOpt,
    EPOpt,
    ExpertsOpt,
    ExpertVariantOpt,
    FfnDimMultiplierOpt,
    FusedOpt,
    HeadDimOpt,
    JsonOpt,
    MultipleOfOpt,
    NHeadsOpt,
    NKVHeadsOpt,
    SharedExpertsOpt,
    TopKOpt,
    TPOpt,
    make_spec,
    parse_list,
)
from ffn_cli.errors import FFNError
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS, Family

if TYPE_CHECKING:
    from ffn_cli.attention import AttentionSpec
    from ffn_cli.models.families import UnknownModelType

# The accounting, the model readers and the renderers load inside the command: `ffn --help` and
# `ffn variants` register this command without paying for them.

_MODEL = "Whole model"

VariantsOpt = Annotated[
    str | None,
    typer.Option(
        "--variant",
        "-v",
        autocompletion=complete_variants,
        help="FFN variant, or several comma-separated (relu,gelu,swiglu,moe), or all: " + ", ".join(VARIANTS) + ". \\[default: relu]",
        show_default=False,
    ),
]
MatchParamsOpt = Annotated[
    bool,
    typer.Option("--match-params", help="Size each variant's d_ff so its parameters match the first's (rounded to --multiple-of)."),
]
ParamsDTypeOpt = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        autocompletion=complete_dtypes,
        help="Bytes per element: float32, bfloat16, float16, float8 or float64 (default: float32 for an FFN, bfloat16 for a model).",
        show_default=False,
    ),
]
ConfigOpt = Annotated[
    str | None, typer.Option("--config", help="A Hugging Face config.json, or a model directory holding one.", rich_help_panel=_MODEL)
]
PresetOpt = Annotated[
    str | None,
    typer.Option(
        "--preset",
        help="A well-known model shipped with ffn (see --list-presets).",
        rich_help_panel=_MODEL,
        autocompletion=complete_presets,
    ),
]
ListPresetsOpt = Annotated[
    bool, typer.Option("--list-presets", help="List the presets with their parameter totals.", rich_help_panel=_MODEL)
]

# Options that size one FFN: meaningless beside --config / --preset, which read every size.
_FFN_ONLY = (
    "variant",
    "d_model",
    "d_ff",
    "bias",
    "multiple_of",
    "ffn_dim_multiplier",
    "fused",
    "experts",
    "top_k",
    "shared_experts",
    "expert_variant",
    "capacity_factor",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "attn_bias",
    "match_params",
)


@handles_errors
def params(
    ctx: typer.Context,
    variant: VariantsOpt = None,
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
    n_heads: NHeadsOpt = None,
    n_kv_heads: NKVHeadsOpt = None,
    head_dim: HeadDimOpt = None,
    attn_bias: AttnBiasOpt = None,
    match_params: MatchParamsOpt = False,
    config: ConfigOpt = None,
    preset: PresetOpt = None,
    list_presets: ListPresetsOpt = False,
    dtype: ParamsDTypeOpt = None,
    tp: TPOpt = 1,
    ep: EPOpt = 1,
    json: JsonOpt = False,
) -> None:
    """Parameters per tensor, FLOPs and memory per token of an FFN beside its attention; several
    variants side by side; or a whole model from a config.json or a preset."""
    from ffn_cli.attention import AttentionSpec
    from ffn_cli.models.layer import check_dtype

    if list_presets:
        _reject_given(ctx, [p for p in ctx.params if p not in ("list_presets", "json")], "--list-presets lists every preset alone")
        _print_presets(json)
        return
    if config is not None or preset is not None:
        _reject_ffn_options(ctx)
        unused = {"tp": tp if tp != 1 else None, "ep": ep if ep != 1 else None}
        refuse_unused(unused, "per-rank counts are of one FFN: give its --variant and sizes instead of --config / --preset")
        _print_model(config, preset, check_dtype("bfloat16" if dtype is None else dtype), json)
        return
    specs = [
        make_spec(
            name,
            d_model,
            d_ff,
            bias=bias,
            multiple_of=multiple_of,
            ffn_dim_multiplier=ffn_dim_multiplier,
            fused=fused and _gated(name, expert_variant),
            experts=experts,
            top_k=top_k,
            shared_experts=shared_experts,
            expert_variant=expert_variant,
            capacity_factor=capacity_factor,
        )
        for name in _variant_names("relu" if variant is None else variant)
    ]
    _check_fused(fused, specs)
    if tp != 1 or ep != 1:
        _print_ranks(specs, tp, ep, check_dtype("float32" if dtype is None else dtype), json)
        return
    # One attention for the whole table; its biases follow the (first) FFN unless given.
    qkv_bias = bool(specs[0].bias) if attn_bias is None else attn_bias
    attention = AttentionSpec(d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, qkv_bias=qkv_bias, o_bias=qkv_bias)
    _print_ffns(specs, attention, check_dtype("float32" if dtype is None else dtype), match_params, multiple_of, json)


def _print_ffns(specs: list[FFNSpec], attention: AttentionSpec, dtype: str, match_params: bool, multiple_of: int, json: bool) -> None:
    """One FFN's report, or the comparison table of several."""
    from ffn_cli.models.layer import compare_variants, ffn_report
    from ffn_cli.models.matching import match_misses
    from ffn_cli.render.params import comparison_data, comparison_table, ffn_report_data, ffn_report_view

    if len(specs) == 1 and not match_params:
        report = ffn_report(specs[0], attention, dtype)
        if json:
            emit_json(ffn_report_data(report))
        else:
            console.print(ffn_report_view(report))
        return
    if match_params and len(specs) < 2:
        raise FFNError("match_params", True, "needs two or more variants, e.g. --variant relu,swiglu")
    comparison = compare_variants(specs, attention, dtype, match_params=match_params, multiple_of=multiple_of)
    warnings = [miss.message(multiple_of) for miss in match_misses(comparison, multiple_of)]
    if json:
        emit_json(comparison_data(comparison) | {"warnings": warnings})
    else:
        console.print(comparison_table(comparison))
        for warning in warnings:
            console.print(Text(f"warning: {warning}", style="yellow"))


def _print_ranks(specs: list[FFNSpec], tp: int, ep: int, dtype: str, json: bool) -> None:
    """What each of the tp or ep ranks holds, from the spec alone (no processes, no torch)."""
    from ffn_cli.accounting import total_params
    from ffn_cli.parallel.accounting import check_parallel, per_rank_params
    from ffn_cli.render.parallel import rank_params_json, render_rank_params

    if len(specs) != 1:
        raise FFNError("tp" if tp != 1 else "ep", tp if tp != 1 else ep, "splits one FFN: give a single --variant")
    check_parallel(specs[0], tp=tp, ep=ep)
    ranks = per_rank_params(specs[0], tp=tp, ep=ep, dtype=dtype)
    if json:
        emit_json(rank_params_json(specs[0], ranks) | {"total_params": total_params(specs[0])})
    else:
        console.print(render_rank_params(specs[0], ranks))


def _variant_names(text: str) -> list[str]:
    """'relu, swiglu' → ['relu', 'swiglu']; 'all' → every registry variant."""
    names = parse_list("variant", text)
    if names == ["all"]:
        return list(VARIANTS)
    for name in names:
        if name not in VARIANTS:
            raise FFNError("variant", name, "choose from " + ", ".join(VARIANTS) + ", or all alone")
    return names


def _gated(name: str, expert_variant: str) -> bool:
    variant = VARIANTS[name]
    single = VARIANTS.get(expert_variant) if variant.family == Family.MOE else variant
    return single is not None and single.family == Family.GATED


def _check_fused(fused: bool, specs: list[FFNSpec]) -> None:
    # --fused is dropped for variants it cannot apply to in a comparison; alone it must apply.
    if fused and not any(s.fused_gate_up for s in specs):
        raise FFNError("fused_gate_up", True, "needs a gated variant or a gated expert variant")


def _reject_ffn_options(ctx: typer.Context) -> None:
    _reject_given(ctx, _FFN_ONLY, "sizes one FFN; --config and --preset read every size from the model")


def _reject_given(ctx: typer.Context, names: Sequence[str], allowed: str) -> None:
    """Refuse the first of `names` given on the command line: the chosen path would ignore it."""
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            raise FFNError(name, ctx.params.get(name), allowed)


def _print_model(config: str | None, preset: str | None, dtype: str, json: bool) -> None:
    from ffn_cli.models import config_model, count_model, preset_model
    from ffn_cli.models.families import UnknownModelType
    from ffn_cli.render.params import model_data, model_view

    if config is not None and preset is not None:
        raise FFNError("preset", preset, "give --config or --preset, not both")
    try:
        spec = config_model(config) if config is not None else preset_model(str(preset))
    except UnknownModelType as unknown:
        _print_built(unknown, dtype, json)
        return
    result = count_model(spec)
    if json:
        emit_json(model_data(result, dtype))
    else:
        console.print(model_view(result, dtype))


def _print_built(unknown: UnknownModelType, dtype: str, json: bool) -> None:
    from ffn_cli.models.fallback import count_by_building
    from ffn_cli.models.families import SUPPORTED_MODEL_TYPES
    from ffn_cli.render.built import built_data, built_view

    """No reader knows the model_type: count it by building it with transformers on meta."""
    if not isinstance(unknown.config.get("model_type"), str):
        raise unknown
    built = count_by_building(unknown.config, name=unknown.name, source=unknown.source, known=SUPPORTED_MODEL_TYPES)
    if json:
        emit_json(built_data(built, dtype))
    else:
        console.print(built_view(built, dtype))


def _print_presets(json: bool) -> None:
    from ffn_cli.models import count_model, load_preset, model_spec_from_config, preset_names
    from ffn_cli.render.params import presets_data, presets_table

    models = []
    for name in preset_names():
        config = load_preset(name)
        models.append((name, count_model(model_spec_from_config(config, name=name)), str(config.get("_name_or_path", ""))))
    if json:
        emit_json(presets_data(models))
    else:
        console.print(presets_table(models))
