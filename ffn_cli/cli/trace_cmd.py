"""`ffn trace`: run the real module on a random input and show its shape flow, step by step."""

from __future__ import annotations

from typing import Annotated, cast

import typer

from ffn_cli.cli.common import console, emit_json, handles_errors
from ffn_cli.cli.ffn_options import FFNOptions
from ffn_cli.cli.model_options import ConfigOpt, LayerOpt, ModelOpt, PresetOpt, RevisionOpt
from ffn_cli.cli.numbers import parse_int
from ffn_cli.cli.option_groups import typed_options, with_option_groups
from ffn_cli.cli.options import (
    BatchOpt,
    DeviceOpt,
    DTypeOpt,
    EPOpt,
    HeadDimOpt,
    JsonOpt,
    ModeOpt,
    NHeadsOpt,
    NKVHeadsOpt,
    NormOpt,
    PreNormOpt,
    RankTimeoutOpt,
    SeedOpt,
    SeqLenOpt,
    TPOpt,
)
from ffn_cli.cli.page_option import PageOpt, save_page
from ffn_cli.requests.choices import Loss, Mode, Norm  # the text of a choice, checked by the request against its Literal
from ffn_cli.requests.trace import TraceRequest  # each option's default is the request's
from ffn_cli.services.results import ShardedTrace

_SHOW = "What to show"
ValuesOpt = Annotated[
    int, typer.Option("--values", parser=parse_int, help="First N values of token 0 at every step (0-64).", rich_help_panel=_SHOW)
]
OpsOpt = Annotated[bool, typer.Option("--ops", help="Show the raw aten ops instead of the grouped steps.", rich_help_panel=_SHOW)]
CheckOpt = Annotated[
    bool,
    typer.Option("--check", help="Compare with the NumPy float64 reference on the same weights and input.", rich_help_panel=_SHOW),
]
ExplainOpt = Annotated[
    bool,
    typer.Option("--explain", help="Under the steps, a line or two on why each step is there.", rich_help_panel=_SHOW),
]
BlockOpt = Annotated[bool, typer.Option("--block", help="Trace the FFN inside its Transformer block.", rich_help_panel="Attention")]
ModuleOpt = Annotated[
    str | None,
    typer.Option(
        "--module",
        help="Trace your own module: FILE.py:NAME(args) or package.module:NAME(args), NAME a class, a function or an instance; "
        "literal args only. Runs your code.",
        rich_help_panel="Your module",
    ),
]
DepthOpt = Annotated[
    int | None,
    typer.Option(
        "--depth",
        help="With --module or a model's own FFN module: submodules this many levels deep become steps (default 1).",
        rich_help_panel="Your module",
    ),
]
ReferenceOpt = Annotated[
    bool,
    typer.Option(
        "--reference",
        help="With --module or a model's own FFN module: which registry FFN it computes, held to the NumPy float64 reference "
        "on its own weights (or the closest, and where the outputs part).",
        rich_help_panel="Your module",
    ),
]
_BACKWARD = "Backward"
BackwardOpt = Annotated[
    bool,
    typer.Option(
        "--backward",
        help="Then run the backward and show it step by step: gradients, FLOPs, saved tensors read.",
        rich_help_panel=_BACKWARD,
    ),
]
LossOpt = Annotated[
    str | None,
    typer.Option(
        "--loss", help="dL/dy for --backward: random (seeded normal, the default), sum (all ones), mse.", rich_help_panel=_BACKWARD
    ),
]
GradCheckpointOpt = Annotated[
    bool,
    typer.Option(
        "--checkpoint", help="With --backward: checkpoint the FFN; backward recomputes its activations.", rich_help_panel=_BACKWARD
    ),
]


EXAMPLES = """[bold]Examples[/]

  ffn trace                                      the classic FFN, step by step
  ffn trace -v swiglu --backward                 SwiGLU, and its backward pass
  ffn trace --preset llama-3.1-8b --device meta  one layer of a real model"""


@handles_errors
@with_option_groups
def trace(
    ctx: typer.Context,
    ffn: FFNOptions,
    batch: BatchOpt = TraceRequest.batch,
    seq_len: SeqLenOpt = TraceRequest.seq_len,
    device: DeviceOpt = "cpu",
    dtype: DTypeOpt = "float32",
    seed: SeedOpt = TraceRequest.seed,
    mode: ModeOpt = TraceRequest.mode,
    values: ValuesOpt = TraceRequest.values,
    ops: OpsOpt = False,
    check: CheckOpt = False,
    explain: ExplainOpt = False,
    block: BlockOpt = False,
    backward: BackwardOpt = False,
    loss: LossOpt = None,
    checkpoint: GradCheckpointOpt = False,
    n_heads: NHeadsOpt = None,
    n_kv_heads: NKVHeadsOpt = None,
    head_dim: HeadDimOpt = None,
    norm: NormOpt = TraceRequest.norm,
    pre_norm: PreNormOpt = False,
    tp: TPOpt = TraceRequest.tp,
    ep: EPOpt = TraceRequest.ep,
    rank_timeout: RankTimeoutOpt = None,
    preset: PresetOpt = None,
    config: ConfigOpt = None,
    model: ModelOpt = None,
    revision: RevisionOpt = None,
    layer: LayerOpt = None,
    module: ModuleOpt = None,
    depth: DepthOpt = None,
    reference: ReferenceOpt = False,
    json: JsonOpt = False,
    page: PageOpt = None,
) -> None:
    """Run the FFN once on a random (batch, seq_len, d_model) input and show every step: shapes, weights, FLOPs, values.

    With no options it is the classic demo: relu, d_model 512, d_ff 2048, batch 2, seq_len 5.
    With --preset, --config or --model it is one layer of that model at its real sizes.
    With --module it is your own nn.Module, step by step.
    """
    # One request field per option, by the same name (tests/test_declarations.py holds them so);
    # the text view records torch calls, --json (and --ops, --page) the aten ops it lists.
    request = TraceRequest(
        ffn=ffn, batch=batch, seq_len=seq_len, device=device, dtype=dtype, seed=seed, mode=cast(Mode, mode), values=values, ops=ops,
        check=check, explain=explain, block=block, backward=backward, loss=cast(Loss | None, loss), checkpoint=checkpoint, n_heads=n_heads,
        n_kv_heads=n_kv_heads, head_dim=head_dim, norm=cast(Norm, norm), pre_norm=pre_norm, tp=tp, ep=ep, rank_timeout=rank_timeout,
        preset=preset, config=config, model=model, revision=revision, layer=layer, module=module, depth=depth,
        reference=reference, page=page, text_only=not json, typed=typed_options(ctx, list(ctx.params)),
    )  # fmt: skip
    # The request is whole and checked: only now do the service, and torch with it, and the presenter load.
    from ffn_cli.render.presenters.trace import present
    from ffn_cli.services.trace import trace as answer_trace

    result = answer_trace(request)
    if isinstance(result, ShardedTrace) and not result.shown:
        return
    presented = present(result)
    if json:
        emit_json(presented.data())
    else:
        console.print(presented.view())
    if page is not None and presented.drawing is not None:
        save_page(page, presented.drawing(True))
    if result.failure is not None:
        raise result.failure
