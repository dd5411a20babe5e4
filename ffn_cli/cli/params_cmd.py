"""`ffn params`: parameters, FLOPs and memory of one FFN beside its attention, of variants side
by side, or of a whole model from its config.json. Pure Python: it never imports torch."""

from __future__ import annotations

from typing import Annotated, cast

import typer

from ffn_cli.cli.common import console, emit_json, handles_errors
from ffn_cli.cli.complete import complete_dtypes
from ffn_cli.cli.ffn_options import FFNOptions
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
from ffn_cli.cli.numbers import parse_int
from ffn_cli.cli.option_groups import typed_options, with_option_groups
from ffn_cli.cli.options import (
    AttnBiasOpt,
    EPOpt,
    HeadDimOpt,
    JsonOpt,
    NHeadsOpt,
    NKVHeadsOpt,
    TPOpt,
    as_name,
    parse_int_tuple,
    parse_names,
    parse_paths,
)
from ffn_cli.requests.choices import Phase  # the text of a choice, checked by the request against its Literal
from ffn_cli.requests.params import ParamsRequest  # each option's default is the request's
from ffn_cli.services.results import ModelParamsAnswer, Roofline

EXAMPLES = """[bold]Examples[/]

  ffn params -v relu,swiglu,moe           variants side by side
  ffn params --preset llama-3.1-8b        a whole model: parameters, memory
  ffn params --config config.json --json  any config.json, as JSON"""

# The service and its presenter load inside the command: `ffn --help` and `ffn variants`
# register this command without paying for them. The command is its options and a face:
# ParamsRequest checks them (requests/params.py), services/params.py answers with a result
# (services/results.py), render/presenters/params.py shows it.

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
        help="Build a model no reader knows with transformers again, rather than read its counts or layout from ffn's cache.",
        rich_help_panel=_MODEL,
    ),
]
SourceLenOpt = Annotated[
    int | None,
    typer.Option(
        "--source-len",
        parser=parse_int,
        help="Tokens of the source an encoder-decoder's decoder attends to: what its cross-attention keeps and scores "
        "(default: the most its encoder hands on).",
        rich_help_panel=_MODEL,
        show_default=False,
    ),
]
ExplainOpt = Annotated[
    bool,
    typer.Option("--explain", help="Say why the FFN is about two thirds of a layer, and what the ratio is here (one FFN or one model)."),
]
ListPresetsOpt = Annotated[
    bool, typer.Option("--list-presets", help="List the presets with their parameter totals.", rich_help_panel=_MODEL)
]


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
    tp: TPOpt = ParamsRequest.tp,
    ep: EPOpt = ParamsRequest.ep,
    weights: WeightsOpt = None,
    quantize: QuantizeOpt = None,
    no_mtp: NoMTPOpt = False,
    source_len: SourceLenOpt = None,
    gpu: GPUOpt = None,
    batch: BatchListOpt = None,
    tokens: TokensOpt = None,
    phase: PhaseOpt = ParamsRequest.phase,
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
    from ffn_cli.render.presenters.params import present
    from ffn_cli.services.params import params as answer_params

    # One request field per option, by the same name (tests/test_declarations.py holds them so);
    # a comma list is read here, at the boundary, into the request's tuple.
    request = ParamsRequest(
        ffn=ffn, n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, attn_bias=attn_bias, match_params=match_params,
        config=None if config is None else parse_paths("config", config),
        preset=None if preset is None else parse_names("preset", preset),
        model=None if model is None else parse_names("model", model), revision=revision, list_presets=list_presets, no_cache=no_cache,
        seq_len=None if seq_len is None else parse_int_tuple("seq_len", seq_len), dtype=dtype, tp=tp, ep=ep,
        weights=weights, quantize=quantize, no_mtp=no_mtp, source_len=source_len, gpu=gpu,
        batch=None if batch is None else parse_int_tuple("batch", batch),
        tokens=tokens, phase=cast(Phase, phase), backward=backward, plot=plot, explain=explain, typed=typed_options(ctx, list(ctx.params)),
    )  # fmt: skip
    result = answer_params(request)
    if isinstance(result, ModelParamsAnswer) and result.costs.roofline is not None:
        _draw_plot(result.costs.roofline)  # before the tables, which say it was written
    presented = present(result)
    if json:
        emit_json(presented.data())
    else:
        console.print(presented.view())


def _draw_plot(roofline: Roofline) -> None:
    """--plot's sweep, drawn and written by ffn_cli/outputs.py's writer (under --json too)."""
    if roofline.plot is None:
        return
    from ffn_cli.render.plot import write_roofline_plot

    r = roofline
    write_roofline_plot(r.costs, r.gpu, r.column, r.model, r.n_layers, str(r.plot), r.backward)
