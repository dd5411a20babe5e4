"""`ffn params`: parameters, FLOPs and memory of one FFN beside its attention, of variants side
by side, or of a whole model from its config.json. Pure Python: it never imports torch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from ffn_cli.cli.common import console, emit_json, handles_errors, refuse_unused
from ffn_cli.cli.complete import complete_dtypes
from ffn_cli.cli.ffn_options import VALUES_ONLY, FFNOptions
from ffn_cli.cli.hardware_options import (
    BatchListOpt,
    GPUOpt,
    NoMTPOpt,
    PhaseOpt,
    QuantizeOpt,
    RooflineBackwardOpt,
    RooflinePlotOpt,
    TokensOpt,
    WeightsOpt,
)
from ffn_cli.cli.model_options import ConfigOpt, ModelOpt, PresetOpt, RevisionOpt
from ffn_cli.cli.option_groups import with_option_groups
from ffn_cli.cli.options import AttnBiasOpt, EPOpt, HeadDimOpt, JsonOpt, NHeadsOpt, NKVHeadsOpt, TPOpt, as_name, parse_int_list
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _, shown
from ffn_cli.services.costs import CostOptions
from ffn_cli.spec import FFNSpec

if TYPE_CHECKING:
    from ffn_cli.attention import AttentionSpec
    from ffn_cli.models.explain import BlockExplain
    from ffn_cli.models.source import LoadedModel
    from ffn_cli.models.unknown import UnknownModelType

EXAMPLES = """[bold]Examples[/]

  ffn params -v relu,swiglu,moe           variants side by side
  ffn params --preset llama-3.1-8b        a whole model: parameters, memory
  ffn params --config config.json --json  any config.json, as JSON"""

# The accounting, the model readers and the renderers load inside the command: `ffn --help` and
# `ffn variants` register this command without paying for them.

_MODEL = "Real model"

MatchParamsOpt = Annotated[
    bool,
    typer.Option("--match-params", help="Size each variant's d_ff so its parameters match the first's (rounded to --multiple-of)."),
]
ParamsDTypeOpt = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        autocompletion=complete_dtypes,
        callback=as_name,
        help="Bytes per element: float32, bfloat16, float16, float8 or float64 (default: float32 for an FFN, bfloat16 for a model).",
        show_default=False,
    ),
]
SeqLensOpt = Annotated[
    str | None,
    typer.Option(
        "--seq-len",
        "-s",
        help="FLOPs per token of the FFN, the attention projections and scores at these lengths (a comma list), "
        "the FFN's share and the crossover.",
        show_default=False,
    ),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Build a model no reader knows with transformers again, rather than read its counts from ffn's cache.",
        rich_help_panel=_MODEL,
    ),
]
ExplainOpt = Annotated[
    bool,
    typer.Option("--explain", help="Say why the FFN is about two thirds of a layer, and what the ratio is here (one FFN or one model)."),
]
ListPresetsOpt = Annotated[
    bool, typer.Option("--list-presets", help="List the presets with their parameter totals.", rich_help_panel=_MODEL)
]

# Beside --config / --preset / --model every FFN option and these are refused: the model sets them.
_ATTENTION_OPTIONS = ("n_heads", "n_kv_heads", "head_dim", "attn_bias", "match_params")
_READS_EVERY_SIZE = N_("sizes one FFN; --config, --preset and --model read every size from the model")
# FFN options that change the module's values but no count: params refuses them rather than ignore them.
_NO_COUNT = VALUES_ONLY  # spec.py's Option of each says so


@handles_errors
@with_option_groups
def params(
    ctx: typer.Context,
    ffn: FFNOptions,
    n_heads: NHeadsOpt = None,
    n_kv_heads: NKVHeadsOpt = None,
    head_dim: HeadDimOpt = None,
    attn_bias: AttnBiasOpt = None,
    match_params: MatchParamsOpt = False,
    config: ConfigOpt = None,
    preset: PresetOpt = None,
    model: ModelOpt = None,
    revision: RevisionOpt = None,
    list_presets: ListPresetsOpt = False,
    no_cache: NoCacheOpt = False,
    seq_len: SeqLensOpt = None,
    dtype: ParamsDTypeOpt = None,
    tp: TPOpt = 1,
    ep: EPOpt = 1,
    weights: WeightsOpt = None,
    quantize: QuantizeOpt = None,
    no_mtp: NoMTPOpt = False,
    gpu: GPUOpt = None,
    batch: BatchListOpt = None,
    tokens: TokensOpt = None,
    phase: PhaseOpt = "prefill",
    backward: RooflineBackwardOpt = False,
    plot: RooflinePlotOpt = None,
    explain: ExplainOpt = False,
    json: JsonOpt = False,
) -> None:
    """Parameters, FLOPs and memory of an FFN beside its attention, of variants side by side, or of whole models.

    One FFN: every tensor, its FLOPs and activation memory per token. A comma list of variants:
    one comparison table. With --preset, --config or --model: a whole model, exact to the
    parameter; a comma list compares models.
    """
    from ffn_cli.attention import AttentionSpec
    from ffn_cli.models.layer import check_dtype

    if list_presets:
        _reject_given(ctx, [p for p in ctx.params if p not in ("list_presets", "json")], _("--list-presets lists every preset alone"))
        _print_presets(json)
        return
    # With --gpu, --seq-len sizes the roofline's pass instead of listing lengths to count FLOPs at.
    seq_lens = parse_int_list("seq_len", seq_len) if seq_len is not None and gpu is None else []
    costs = CostOptions(
        weights, quantize, gpu, batch, tokens, phase, seq_len if gpu is not None else None, tp, ep, backward, plot, not no_mtp
    )
    if config is not None or preset is not None or model is not None:
        ffn.refuse(tuple(ffn.given), _(_READS_EVERY_SIZE))
        _reject_given(ctx, _ATTENTION_OPTIONS, _(_READS_EVERY_SIZE))
        model_dtype = check_dtype("bfloat16" if dtype is None else dtype)
        _print_models(preset, config, model, revision, model_dtype, seq_lens, json, costs, no_cache, explain=explain)
        return
    if gpu is not None:  # one FFN on a GPU of the table, or on the measured profile `this`
        from ffn_cli.cli.ffn_gpu import ffn_on_gpu

        return ffn_on_gpu(ffn, costs, dtype, json)
    _whole_model = _("applies to a whole model: give --preset, --config or --model")
    given = {"weights": weights, "quantize": quantize, "gpu": gpu, "batch": batch, "tokens": tokens, "backward": backward, "plot": plot}
    given["no_mtp"] = no_mtp or None
    refuse_unused(given, _whole_model)
    _reject_given(ctx, ("phase",), _whole_model)
    refuse_unused({"revision": revision}, _("applies to --model (a Hub model id)"))
    refuse_unused({"no_cache": no_cache or None}, _("applies to --config, --preset and --model"))
    ffn.refuse(_NO_COUNT, "changes the values, not one count or FLOP; ffn trace runs it", unless_default=True)
    widths = ffn.widths()
    if len(widths) > 1:
        raise FFNError("d_model", ffn.d_model, _("ffn params compares variants at one width; give one --d-model (ffn bench sweeps)"))
    d_model = widths[0]
    specs = [_fused_where_used(ffn.spec(name, d_model, fused_gate_up=False), ffn.fused) for name in ffn.variants()]
    ffn.check_used(specs)
    _check_fused(ffn.fused, specs)
    if tp != 1 or ep != 1:
        refuse_unused({"explain": explain or None}, _(_EXPLAINS_ONE))
        refuse_unused({"seq_len": seq_len}, _("per-rank counts hold no sequence; drop it or --tp / --ep"))
        _reject_given(ctx, _ATTENTION_OPTIONS, _("per-rank counts are of the FFN alone; drop it or --tp / --ep"))
        _print_ranks(specs, tp, ep, check_dtype("float32" if dtype is None else dtype), json)
        return
    # One attention for the whole table, whatever the order of the list: biased when every FFN
    # is (the tutorial's block), else not, unless --attn-bias says.
    qkv_bias = all(bool(s.bias) for s in specs) if attn_bias is None else attn_bias
    attention = AttentionSpec(d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, qkv_bias=qkv_bias, o_bias=qkv_bias)
    ffn_dtype = check_dtype("float32" if dtype is None else dtype)
    _print_ffns(specs, attention, ffn_dtype, match_params, ffn.multiple_of, seq_lens, json, explain=explain)


_EXPLAINS_ONE = N_("explains one FFN or one model: give one --variant, or one model")


def _print_ffns(
    specs: list[FFNSpec],
    attention: AttentionSpec,
    dtype: str,
    match_params: bool,
    multiple_of: int,
    seq_lens: list[int],
    json: bool,
    *,
    explain: bool = False,
) -> None:
    """One FFN's report (with its FLOPs over --seq-len), or the comparison table of several."""
    from ffn_cli.models.explain import explain_ffn
    from ffn_cli.models.layer import compare_variants, ffn_report
    from ffn_cli.models.matching import match_misses
    from ffn_cli.models.seq_flops import flops_over_length, single_layer
    from ffn_cli.render.params.comparison import comparison_data, comparison_table
    from ffn_cli.render.params.report import ffn_report_data, ffn_report_view
    from ffn_cli.render.seq_flops import seq_flops_data, seq_flops_view

    if len(specs) == 1 and not match_params:
        report = ffn_report(specs[0], attention, dtype)
        stack = single_layer(specs[0], attention)
        rows = flops_over_length(stack, seq_lens)
        block = explain_ffn(report) if explain else None
        if json:
            explained = {"explain": block.data()} if block else {}
            emit_json(ffn_report_data(report) | ({"flops_over_seq_len": seq_flops_data(stack, rows)} if rows else {}) | explained)
        else:
            console.print(ffn_report_view(report))
            if rows:
                console.print(Text(""), seq_flops_view(stack, rows, _("one layer")))
            _explain(block)
        return
    refuse_unused({"explain": explain or None}, _(_EXPLAINS_ONE))
    refuse_unused({"seq_len": ",".join(map(str, seq_lens)) or None}, _("FLOPs over length are of one FFN or of models: give one --variant"))
    if match_params and len(specs) < 2:
        raise FFNError("match_params", True, _("needs two or more variants, e.g. --variant relu,swiglu"))
    comparison = compare_variants(specs, attention, dtype, match_params=match_params, multiple_of=multiple_of)
    warnings = [miss.message(multiple_of) for miss in match_misses(comparison, multiple_of)]
    if json:
        emit_json(comparison_data(comparison) | {"warnings": warnings})
    else:
        console.print(comparison_table(comparison))
        for warning in warnings:
            console.print(Text(_("warning: {message}").format(message=shown(warning)), style="yellow"))


def _print_ranks(specs: list[FFNSpec], tp: int, ep: int, dtype: str, json: bool) -> None:
    """What each of the tp or ep ranks holds, from the spec alone (no processes, no torch)."""
    from ffn_cli.accounting import total_params
    from ffn_cli.parallel.accounting import check_parallel, per_rank_params
    from ffn_cli.render.parallel import rank_params_json, render_rank_params

    if len(specs) != 1:
        raise FFNError("tp" if tp != 1 else "ep", tp if tp != 1 else ep, _("splits one FFN: give a single --variant"))
    check_parallel(specs[0], tp=tp, ep=ep)
    ranks = per_rank_params(specs[0], tp=tp, ep=ep, dtype=dtype)
    if json:
        emit_json(rank_params_json(specs[0], ranks) | {"total_params": total_params(specs[0])})
    else:
        console.print(render_rank_params(specs[0], ranks))


def _fused_where_used(spec: FFNSpec, fused: bool) -> FFNSpec:
    """`spec` with --fused where its variant reads fused_gate_up (a gated FFN, a mixture of gated experts)."""
    return spec.with_(fused_gate_up=True) if fused and "fused_gate_up" in spec.info.options_used(spec) else spec


def _check_fused(fused: bool, specs: list[FFNSpec]) -> None:
    # --fused is dropped for variants it cannot apply to in a comparison; alone it must apply.
    if fused and not any(s.fused_gate_up for s in specs):
        raise FFNError("fused_gate_up", True, _("needs a gated variant or a gated expert variant"))


def _reject_given(ctx: typer.Context, names: Sequence[str], allowed: str) -> None:
    """Refuse the first of `names` given on the command line: the chosen path would ignore it."""
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            raise FFNError(name, ctx.params.get(name), allowed)


def _print_models(
    preset: str | None,
    config: str | None,
    model: str | None,
    revision: str | None,
    dtype: str,
    seq_lens: list[int],
    json: bool,
    costs: CostOptions | None = None,
    no_cache: bool = False,
    *,
    explain: bool = False,
) -> None:
    """One model's breakdown (with its FLOPs over --seq-len), or several side by side; a
    model_type no reader knows is counted by building it with transformers."""
    from ffn_cli.models.source import load_models
    from ffn_cli.models.unknown import UnknownModelType

    try:
        models = load_models(preset=preset, config=config, model=model, revision=revision)
    except UnknownModelType as unknown:
        if len(_named_models(preset, config, model)) > 1:  # counted by building it: alone, not in a comparison
            option = "config" if config is not None and unknown.source in config else "model"
            why = _("model_type {value!r} has no reader: ffn params counts it by building it, alone; drop it from the comparison").format(
                value=unknown.value
            )
            raise FFNError(option, unknown.source, why) from None
        refuse_unused({"seq_len": ",".join(map(str, seq_lens)) or None}, _("FLOPs over length need a model ffn reads itself"))
        _refuse_costs(costs, _("needs a model ffn reads itself"))
        refuse_unused({"explain": explain or None}, _("needs a model ffn reads itself"))
        _print_built(unknown, dtype, json, use_cache=not no_cache)
        return
    if len(models) > 1:
        _refuse_costs(costs, _("is asked of one model: name one"))
        refuse_unused({"explain": explain or None}, _(_EXPLAINS_ONE))
    _print_loaded(models, dtype, seq_lens, json, costs, explain=explain)


def _named_models(*lists: str | None) -> list[str]:
    return [item for text in lists if text for item in text.split(",") if item.strip()]


def _refuse_costs(costs: CostOptions | None, allowed: str) -> None:
    if costs is not None and costs.asked:
        given = {"weights": costs.weights, "quantize": costs.quantize, "gpu": costs.gpu, "batch": costs.batch, "tokens": costs.tokens}
        given |= {"backward": costs.backward or None, "plot": costs.plot, "no_mtp": None if costs.mtp else True}
        refuse_unused(given | {"tp": costs.tp if costs.tp != 1 else None, "ep": costs.ep if costs.ep != 1 else None}, allowed)


def _explain(block: BlockExplain | None) -> None:
    """--explain: the block under the tables."""
    if block is not None:
        from ffn_cli.render.params.explain import explain_view

        console.print(Text(""), explain_view(block))


def _print_loaded(
    models: list[LoadedModel], dtype: str, seq_lens: list[int], json: bool, costs: CostOptions | None = None, *, explain: bool = False
) -> None:
    from ffn_cli.models import count_model
    from ffn_cli.models.explain import explain_model
    from ffn_cli.models.seq_flops import flops_over_length, model_stack
    from ffn_cli.render.model_compare import model_comparison_data, model_comparison_view
    from ffn_cli.render.params.model import model_data, model_view
    from ffn_cli.render.seq_flops import seq_flops_data, seq_flops_view
    from ffn_cli.services.costs import model_costs

    compared = []
    for m in models:
        stack = model_stack(m.spec, m.windows, causal=m.causal, chunks=m.chunks)
        compared.append((m.spec.name, count_model(m.spec), stack, flops_over_length(stack, seq_lens)))
    if len(compared) > 1:
        if json:
            emit_json(model_comparison_data(compared, dtype))
        else:
            console.print(model_comparison_view(compared, dtype))
        return
    _name, result, stack, rows = compared[0]
    shown, cost_data = model_costs(models[0], dtype, costs or CostOptions())
    block = explain_model(result) if explain else None
    explained = {"explain": block.data()} if block else {}
    if json:
        emit_json(model_data(result, dtype) | ({"flops_over_seq_len": seq_flops_data(stack, rows)} if rows else {}) | cost_data | explained)
        return
    console.print(model_view(result, dtype))
    if rows:
        console.print(Text(""), seq_flops_view(stack, rows, _("{n} layers").format(n=result.spec.n_layers)))
    for table in shown:
        console.print(Text(""), table)
    _explain(block)


def _print_built(unknown: UnknownModelType, dtype: str, json: bool, *, use_cache: bool = True) -> None:
    """No reader knows the model_type: count it by building it with transformers on meta (or
    read the counts of an earlier build of the same config from the cache)."""
    from ffn_cli.models.built_cache import count_cached
    from ffn_cli.models.families import SUPPORTED_MODEL_TYPES
    from ffn_cli.render.built import built_data, built_view

    if not isinstance(unknown.config.get("model_type"), str):
        raise unknown
    built = count_cached(unknown.config, name=unknown.name, source=unknown.source, known=SUPPORTED_MODEL_TYPES, use_cache=use_cache)
    if json:
        emit_json(built_data(built, dtype))
    else:
        console.print(built_view(built, dtype))


def _print_presets(json: bool) -> None:
    from ffn_cli.models import count_model, load_preset, model_spec_from_config, preset_names
    from ffn_cli.render.params.presets import presets_data, presets_table

    models = []
    for name in preset_names():
        config = load_preset(name)
        models.append((name, count_model(model_spec_from_config(config, name=name)), str(config.get("_name_or_path", ""))))
    if json:
        emit_json(presets_data(models))
    else:
        console.print(presets_table(models))
