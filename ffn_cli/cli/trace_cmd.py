"""`ffn trace`: run the real module on a random input and show its shape flow, step by step."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ffn_cli.cli.common import console, emit_json, handles_errors, refuse_unused, require_temp_dir
from ffn_cli.cli.ffn_options import FFNOptions
from ffn_cli.cli.model_options import ConfigOpt, LayerOpt, ModelOpt, PresetOpt, RevisionOpt, model_layer
from ffn_cli.cli.numbers import parse_int
from ffn_cli.cli.option_groups import with_option_groups
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
    SeedOpt,
    SeqLenOpt,
    TPOpt,
)
from ffn_cli.cli.page_option import PageOpt, page_target, write_page
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.spec import FFNSpec

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
    batch: BatchOpt = 2,
    seq_len: SeqLenOpt = 5,
    device: DeviceOpt = "cpu",
    dtype: DTypeOpt = "float32",
    seed: SeedOpt = 0,
    mode: ModeOpt = "eval",
    values: ValuesOpt = 0,
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
    norm: NormOpt = "layernorm",
    pre_norm: PreNormOpt = False,
    tp: TPOpt = 1,
    ep: EPOpt = 1,
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
    require_temp_dir()  # before torch is imported
    page_file = page_target(page)
    from ffn_cli.block import NORMS, BlockSpec
    from ffn_cli.models.unknown import UnknownModelType
    from ffn_cli.render.trace import trace_data, trace_view
    from ffn_cli.trace import check_failure
    from ffn_cli.trace import trace as run_trace

    run = {"batch": batch, "seq_len": seq_len, "device": device, "dtype": dtype, "seed": seed, "mode": mode.strip().lower()}
    # depth None: a module of your own is opened through its wrappers and containers; a model's own module at 1.
    run |= {"values": values, "depth": depth, "backward": backward, "loss": loss, "checkpoint": checkpoint}
    # The aten ops are recorded where the output names them (--ops, --json, the page's JSON);
    # the text view records torch calls, the same steps without the dispatch level's start-up.
    run["aten"] = ops or json or page_file is not None
    if explain and ops:
        raise FFNError("explain", True, _("explains the steps; --ops shows the raw aten ops instead: drop one"))
    if module is not None:
        registry_only = {"check": check, "block": block, "tp": tp if tp != 1 else None, "ep": ep if ep != 1 else None}
        registry_only |= {"n_heads": n_heads, "n_kv_heads": n_kv_heads, "head_dim": head_dim, "pre_norm": pre_norm}
        registry_only |= {"norm": norm if norm.strip().lower() != "layernorm" else None}
        registry_only |= {"preset": preset, "config": config, "model": model, "layer": layer, "revision": revision}
        refuse_unused(registry_only, _("works on a registry variant or a model's layer, not with --module: drop it"))
        ffn.refuse(
            tuple(n for n in ffn.given if n != "d_model"), _("sizes a registry variant; --module traces your module as it is: drop it")
        )
        width = ffn.widths()[0] if "d_model" in ffn.given else None
        _trace_user_module(module, d_model=width, ops=ops, explain=explain, json=json, page=page_file, reference=reference, **run)
        return
    try:
        choice = model_layer(ctx, preset=preset, config=config, model=model, revision=revision, layer=layer, block=block)
    except UnknownModelType as unknown:  # no reader: trace the model's own FFN module, built by transformers
        refuse_unused({"check": check}, _("compares a registry variant with its NumPy reference; a model's own module has none"))
        _trace_model_module(unknown, layer=layer, ops=ops, explain=explain, json=json, page=page_file, reference=reference, **run)
        return
    if reference:
        raise FFNError(
            "reference", True, _("names the registry FFN your module computes: use it with --module (a registry variant has --check)")
        )
    if depth is not None:
        raise FFNError(
            "depth", depth, _("groups the steps of --module or of a model's own FFN module; a registry variant has its own steps")
        )
    if choice is not None:
        spec, dtype = choice.ffn, choice.dtype
    else:
        spec = ffn.one_spec(_("ffn trace runs one FFN: give one value (ffn params compares, ffn bench sweeps)"))
    if norm.strip().lower() not in NORMS:
        raise FFNError("norm", norm, _("choose one of {norms}").format(norms=", ".join(NORMS)))
    if not block:  # the attention options shape the block; without it they would be ignored
        attention = {
            "n_heads": n_heads,
            "n_kv_heads": n_kv_heads,
            "head_dim": head_dim,
            "norm": norm if norm.strip().lower() != "layernorm" else None,
        }
        refuse_unused({**attention, "pre_norm": pre_norm}, _("shapes the Transformer block around the FFN: add --block, or drop it"))
    if tp != 1 or ep != 1:
        unused = {
            "block": block,
            "mode": mode if mode.strip().lower() != "eval" else None,
            "values": values or None,
            "ops": ops,
            "explain": explain,
            "backward": backward,
            "loss": loss,
            "checkpoint": checkpoint,
            "page": page,
        }
        refuse_unused(unused, _("--tp / --ep run the sharded forward in eval mode and compare it with the unsharded module; drop it"))
        _trace_parallel(spec, tp=tp, ep=ep, batch=batch, seq_len=seq_len, device=device, dtype=dtype, seed=seed, json=json)
        return
    if choice is not None and choice.attention is not None:
        block_spec: BlockSpec | None = BlockSpec(spec, choice.attention, choice.norm, choice.pre_norm, choice.eps)
    else:
        block_spec = (
            BlockSpec.around(spec, n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, norm=norm, pre_norm=pre_norm)
            if block
            else None
        )
    result = run_trace(
        spec,
        batch=batch,
        seq_len=seq_len,
        device=device,
        dtype=dtype,
        seed=seed,
        mode=mode.strip().lower(),
        values=values,
        check=check,
        block=block_spec,
        backward=backward,
        loss=loss,
        checkpoint=checkpoint,
        aten=run["aten"],
    )
    if json:
        emit_json(trace_data(result, ops=ops, explain=explain) | ({"model": choice.data()} if choice is not None else {}))
    else:
        if choice is not None:
            from ffn_cli.render.model_layer import model_layer_view

            console.print(model_layer_view(choice))
        console.print(trace_view(result, ops=ops, values=values, explain=explain))
    write_page(page_file, result, {"model": choice.data()} if choice is not None else None)
    failure = check_failure(result)
    if failure is not None:
        raise failure


def _trace_parallel(spec: FFNSpec, *, tp: int, ep: int, batch: int, seq_len: int, device: str, dtype: str, seed: int, json: bool) -> None:
    """Shard the FFN over tp or ep ranks (spawned, or joined under torchrun), run it, check it
    against the unsharded module on the same weights; only the primary process prints."""
    from ffn_cli.parallel import check_parallel, is_primary_process, run_parallel
    from ffn_cli.render.parallel import parallel_json, render_parallel
    from ffn_cli.spec import check_int

    check_parallel(spec, tp=tp, ep=ep)
    check_int("batch", batch)
    check_int("seq_len", seq_len)
    mode = "tp" if tp > 1 else "ep"
    result = run_parallel(spec, max(tp, ep), mode=mode, batch=batch, seq_len=seq_len, dtype=dtype, device=device, seed=seed)
    if not is_primary_process():
        return
    if json:
        emit_json(parallel_json(result))
    else:
        console.print(render_parallel(result))
    if not result.passed:
        raise FFNRuntimeError(
            _("sharded output differs from the unsharded module by {diff:.3g}").format(diff=result.max_abs_diff_vs_unsharded)
        )


def _show(result: Any, *, ops: bool, values: int, explain: bool, json: bool, page: Path | None = None) -> None:
    from ffn_cli.render.trace import trace_data, trace_view

    if json:
        emit_json(trace_data(result, ops=ops, explain=explain))
    else:
        console.print(trace_view(result, ops=ops, values=values, explain=explain))
    write_page(page, result)


def _trace_model_module(
    unknown: Any, *, layer: int | None, ops: bool, explain: bool, json: bool, page: Path | None, reference: bool, **run: Any
) -> None:
    """A model_type no reader knows: its own FFN module, built by transformers, traced as any module."""
    from ffn_cli.models import SUPPORTED_MODEL_TYPES
    from ffn_cli.models.fallback import require_transformers

    require_transformers(unknown.value, SUPPORTED_MODEL_TYPES)  # before model_module imports it
    from ffn_cli.trace.model_module import trace_model_module

    run["depth"] = run["depth"] if run["depth"] is not None else 1
    result = trace_model_module(unknown.config, name=unknown.name, source=unknown.source, layer=layer, reference=reference, **run)
    _show(result, ops=ops, values=run["values"], explain=explain, json=json, page=page)


def _trace_user_module(
    text: str, *, d_model: int | None, ops: bool, explain: bool, json: bool, page: Path | None, reference: bool, **run: Any
) -> None:
    """--module FILE.py:NAME(args): build the user's module on the device, trace it."""
    from ffn_cli.device import resolve_device_dtype
    from ffn_cli.modules.user import build_user_module, parse_module_ref
    from ffn_cli.trace.any_module import trace_module

    ref = parse_module_ref(text)
    dev, _ = resolve_device_dtype(run["device"], run["dtype"])
    built = build_user_module(ref, device=dev, seed=run["seed"])
    result = trace_module(built, d_model=d_model, d_model_from="--d-model", origin=ref.describe(), reference=reference, **run)
    _show(result, ops=ops, values=run["values"], explain=explain, json=json, page=page)
