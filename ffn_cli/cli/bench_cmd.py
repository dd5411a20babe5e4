"""`ffn bench`: time FFN variants on CPU or CUDA, with TFLOP/s and % of peak."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, cast

import typer

from ffn_cli.cli.common import console, emit_json, err_console, handles_errors
from ffn_cli.cli.complete import complete_devices, complete_impls
from ffn_cli.cli.ffn_options import FFNOptions
from ffn_cli.cli.hardware_options import GPUOpt
from ffn_cli.cli.model_options import ConfigOpt, LayerOpt, ModelOpt, PresetOpt, RevisionOpt
from ffn_cli.cli.numbers import parse_float, parse_int
from ffn_cli.cli.option_groups import typed_options, with_option_groups
from ffn_cli.cli.options import (
    BatchOpt,
    DTypeListOpt,
    EPOpt,
    JsonOpt,
    RankTimeoutOpt,
    SeedOpt,
    SeqLenListOpt,
    TPOpt,
    as_name,
    parse_int_tuple,
    parse_tuple,
)
from ffn_cli.cli.progress import with_progress
from ffn_cli.i18n import _
from ffn_cli.render.literal import visible
from ffn_cli.requests.bench import BenchRequest  # each option's default is the request's
from ffn_cli.requests.choices import Cache, CompileMode, ImplChoice  # the text of a choice, checked by the request against its Literal
from ffn_cli.requests.lists import comma_text
from ffn_cli.services.results import BenchSweep, ShardedTiming

if TYPE_CHECKING:
    from ffn_cli.benchmark.estimate import SweepEstimate

_TIMING = "Timing"
_IMPL = "Implementation"

BackwardOpt = Annotated[bool, typer.Option("--backward", help="Time forward + backward (3× the forward FLOPs).", rich_help_panel=_TIMING)]
CompileOpt = Annotated[bool, typer.Option("--compile", help="Run under torch.compile.", rich_help_panel=_IMPL)]
CompileModeOpt = Annotated[
    str,
    typer.Option(
        "--compile-mode",
        help="torch.compile mode (implies --compile): default, max-autotune-no-cudagraphs, max-autotune, reduce-overhead.",
        rich_help_panel=_IMPL,
    ),
]
ImplOpt = Annotated[
    str | None,
    typer.Option(
        "--impl",
        autocompletion=complete_impls,
        help="Compare implementations (a comma list, or all): eager, fused, compile, fused-compile, autotune, fused-autotune. "
        "Replaces --fused/--compile.",
        rich_help_panel=_IMPL,
    ),
]
CheckpointOpt = Annotated[
    bool,
    typer.Option(
        "--checkpoint", help="Also run with gradient checkpointing: memory saved, time cost (needs --backward).", rich_help_panel=_IMPL
    ),
]
CacheOpt = Annotated[
    str,
    typer.Option(
        "--cache",
        help="cold: rotate inputs and flush the cache between calls; hot: one input, no flush.",
        rich_help_panel=_TIMING,
        callback=as_name,
    ),
]
CalibrateOpt = Annotated[
    bool,
    typer.Option(
        "--calibrate", help="First measure this device's GEMM peak and copy bandwidth; % of peak uses them.", rich_help_panel=_TIMING
    ),
]
WarmupOpt = Annotated[
    float, typer.Option("--warmup-ms", parser=parse_float, help="Warm-up time after the first call, in ms.", rich_help_panel=_TIMING)
]
RepeatsOpt = Annotated[
    int | None,
    typer.Option("--repeats", "-n", parser=parse_int, help="Timed calls per case (instead of --min-time).", rich_help_panel=_TIMING),
]
MinTimeOpt = Annotated[
    float | None,
    typer.Option(
        "--min-time",
        parser=parse_float,
        help="Seconds of timed calls per case (default 0.5; at least 10 calls, at most 10,000: a warning says when that cuts it short).",
        rich_help_panel=_TIMING,
    ),
]
ThreadsOpt = Annotated[
    int | None,
    typer.Option("--threads", parser=parse_int, help="CPU threads (torch.set_num_threads); default: torch's.", rich_help_panel=_TIMING),
]
# The shared --device, less meta: timing needs real memory.
BenchDeviceOpt = Annotated[str, typer.Option("--device", help="cpu, cuda or cuda:N.", autocompletion=complete_devices, callback=as_name)]
MaxCasesOpt = Annotated[
    int,
    typer.Option(
        "--max-cases",
        parser=parse_int,
        help="Refuse a sweep of more cases than this (the product of the comma lists).",
        rich_help_panel=_TIMING,
    ),
]
PlotOpt = Annotated[str | None, typer.Option("--plot", help="Also draw the results to FILE.png (.svg, .pdf); needs matplotlib.")]


EXAMPLES = """[bold]Examples[/]

  ffn bench -v relu,swiglu               how fast each runs here
  ffn bench -s 128,512 --dtype bfloat16  a sweep over sequence lengths
  ffn bench --impl all --device cuda     eager, fused and compiled on a GPU"""


@handles_errors
@with_option_groups
def bench(
    ctx: typer.Context,
    ffn: FFNOptions,
    batch: BatchOpt = BenchRequest.batch,
    seq_len: SeqLenListOpt = comma_text(BenchRequest.seq_len),
    dtype: DTypeListOpt = comma_text(BenchRequest.dtype),
    device: BenchDeviceOpt = BenchRequest.device,
    backward: BackwardOpt = False,
    compile: CompileOpt = False,
    compile_mode: CompileModeOpt = BenchRequest.compile_mode,
    impl: ImplOpt = None,
    checkpoint: CheckpointOpt = False,
    cache: CacheOpt = BenchRequest.cache,
    calibrate: CalibrateOpt = False,
    warmup_ms: WarmupOpt = BenchRequest.warmup_ms,
    repeats: RepeatsOpt = None,
    min_time: MinTimeOpt = None,
    threads: ThreadsOpt = None,
    seed: SeedOpt = BenchRequest.seed,
    plot: PlotOpt = None,
    max_cases: MaxCasesOpt = BenchRequest.max_cases,
    tp: TPOpt = BenchRequest.tp,
    ep: EPOpt = BenchRequest.ep,
    rank_timeout: RankTimeoutOpt = None,
    preset: PresetOpt = None,
    config: ConfigOpt = None,
    model: ModelOpt = None,
    revision: RevisionOpt = None,
    layer: LayerOpt = None,
    gpu: GPUOpt = None,
    json: JsonOpt = False,
) -> None:
    """Time the forward (or forward + backward) pass: median ms, TFLOP/s, % of peak, memory.

    With --preset, --config or --model it times one layer's FFN of that model at its real sizes.
    Once `ffn hardware --measure` has profiled this machine, each case shows the forecast from
    that profile beside the measured time and the roofline bound, with the error in %.
    """
    from ffn_cli.render.presenters.bench import present
    from ffn_cli.services.bench import bench as answer_bench

    # One request field per option, by the same name (tests/test_declarations.py holds them so);
    # a comma list is read here, at the boundary, into the request's tuple.
    request = BenchRequest(
        ffn=ffn, batch=batch, seq_len=parse_int_tuple("seq_len", seq_len), dtype=parse_tuple("dtype", dtype), device=device,
        backward=backward, compile=compile, compile_mode=cast(CompileMode, compile_mode),
        impl=None if impl is None else cast(tuple[ImplChoice, ...], parse_tuple("impl", impl)), checkpoint=checkpoint,
        cache=cast(Cache, cache), calibrate=calibrate, warmup_ms=warmup_ms, repeats=repeats, min_time=min_time, threads=threads,
        seed=seed, plot=plot, max_cases=max_cases, tp=tp, ep=ep, rank_timeout=rank_timeout, preset=preset, config=config,
        model=model, revision=revision, layer=layer, gpu=gpu, typed=typed_options(ctx, list(ctx.params)),
    )  # fmt: skip
    result = with_progress(lambda on_progress: answer_bench(request, on_progress, _say_estimate), "starting")
    if isinstance(result, ShardedTiming) and not result.shown:
        return
    presented = present(result)
    # The results first: a plot that fails to write must not take the table (or the JSON) with it.
    if json:
        emit_json(presented.data())
    else:
        console.print(presented.view())
    if plot is not None and isinstance(result, BenchSweep):
        from ffn_cli.render.bench import write_plot

        written = write_plot(result.report, plot)
        said = _("plot written to {path}").format(path=visible(written))
        (err_console if json else console).print(said, markup=False, highlight=False)  # stdout holds the JSON alone


def _say_estimate(estimate: SweepEstimate) -> None:
    """Before a long sweep, terminal or not: a log or a pipe waits as long."""
    from ffn_cli.render.bench import estimate_line

    err_console.print(estimate_line(estimate), markup=False, highlight=False)
