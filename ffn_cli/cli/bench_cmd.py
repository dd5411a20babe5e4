"""`ffn bench`: time FFN variants on CPU or CUDA, with TFLOP/s and % of peak."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from ffn_cli.cli.common import console, emit_json, err_console, handles_errors, refuse_unused, require_cache_dirs, require_temp_dir
from ffn_cli.cli.complete import complete_devices, complete_impls
from ffn_cli.cli.ffn_options import FFNOptions
from ffn_cli.cli.hardware_options import GPUOpt
from ffn_cli.cli.model_options import ConfigOpt, LayerOpt, ModelOpt, PresetOpt, RevisionOpt, model_layer
from ffn_cli.cli.numbers import parse_float, parse_int
from ffn_cli.cli.option_groups import with_option_groups
from ffn_cli.cli.options import BatchOpt, DTypeListOpt, EPOpt, JsonOpt, SeedOpt, SeqLenListOpt, TPOpt, as_name, parse_int_list, parse_list
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.render.literal import visible
from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.spec import FFNSpec

if TYPE_CHECKING:
    from ffn_cli.bench import BenchReport, ProgressFn

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
    batch: BatchOpt = 8,
    seq_len: SeqLenListOpt = "512",
    dtype: DTypeListOpt = "float32",
    device: BenchDeviceOpt = "cpu",
    backward: BackwardOpt = False,
    compile: CompileOpt = False,
    compile_mode: CompileModeOpt = "default",
    impl: ImplOpt = None,
    checkpoint: CheckpointOpt = False,
    cache: CacheOpt = "cold",
    calibrate: CalibrateOpt = False,
    warmup_ms: WarmupOpt = 300.0,
    repeats: RepeatsOpt = None,
    min_time: MinTimeOpt = None,
    threads: ThreadsOpt = None,
    seed: SeedOpt = 0,
    plot: PlotOpt = None,
    max_cases: MaxCasesOpt = 1_000,  # bench.plan.DEFAULT_MAX_CASES, which cannot be imported before torch
    tp: TPOpt = 1,
    ep: EPOpt = 1,
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
    require_temp_dir()  # before torch is imported
    from ffn_cli.bench import BenchConfig, impl_for, parse_impls, run_bench
    from ffn_cli.render.bench import bench_json, bench_view, check_plot_target, write_plot

    if min_time is not None and not 0 < min_time <= 3600:
        raise FFNError("min_time", min_time, _("seconds in (0, 3600]"))
    if repeats is not None and min_time is not None:
        raise FFNError("repeats", repeats, _("give --repeats or --min-time, not both"))
    compile = compile or compile_mode != "default"  # naming a mode asks for compilation
    if impl is not None and (ffn.fused or compile):
        raise FFNError("impl", impl, _("--impl replaces --fused, --compile and --compile-mode; give one or the other"))
    if plot is not None:
        check_plot_target(plot)
    impls = parse_impls(impl) if impl is not None else [impl_for(fused=ffn.fused, compile_mode=compile_mode if compile else None)]
    if any(i.compile_mode for i in impls):
        require_cache_dirs(("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"), _("torch.compile writes its kernels there"))
    from ffn_cli.models.unknown import UnknownModelType

    try:
        choice = model_layer(ctx, preset=preset, config=config, model=model, revision=revision, layer=layer, not_spec=("fused",))
    except UnknownModelType as unknown:
        raise FFNRuntimeError(
            _(
                "model_type {value!r}: ffn bench times the FFNs it builds from the families it reads; ffn "
                "trace --config traces this model's own FFN module, ffn params --config counts it"
            ).format(value=unknown.value)
        ) from None
    if choice is not None:
        specs, dtype = [choice.ffn], choice.dtype
    else:
        specs = ffn.specs(fused_gate_up=False)  # --fused picks the fused implementation instead
    if tp != 1 or ep != 1:
        unused = {
            "backward": backward,
            "checkpoint": checkpoint,
            "impl": impl,
            "fused": ffn.fused,
            "compile": compile,
            "cache": cache if cache != "cold" else None,
            "calibrate": calibrate,
            "min_time": min_time,
            "threads": threads,
            "plot": plot,
        }
        refuse_unused(unused, _("--tp / --ep time the eager sharded forward alone (--repeats, --warmup-ms); drop it"))
        _bench_parallel(specs, tp, ep, batch, seq_len, dtype, device, seed, warmup_ms, repeats, json)
        return
    config = BenchConfig(
        device=device,
        backward=backward,
        checkpoint=checkpoint,
        cache=cache,
        warmup_ms=warmup_ms,
        repeats=repeats,
        min_time_ms=1e3 * (0.5 if min_time is None else min_time),
        threads=threads,
        calibrate=calibrate,
        seed=seed,
        gpu=None if gpu is None else resolve_gpu(gpu).key,
    )
    report = _run_with_progress(
        lambda on_progress: run_bench(
            specs=specs,
            dtypes=parse_list("dtype", dtype),
            batch=batch,
            seq_lens=parse_int_list("seq_len", seq_len),
            impls=impls,
            config=config,
            on_progress=on_progress,
            max_cases=max_cases,
        )
    )
    # The results first: a plot that fails to write must not take the table with it.
    if json:
        emit_json(bench_json(report) | ({"model": choice.data()} if choice is not None else {}))
        return
    if choice is not None:
        from ffn_cli.render.model_layer import model_layer_view

        console.print(model_layer_view(choice))
    console.print(bench_view(report))
    if plot is not None:
        write_plot(report, plot)
        if not json:
            console.print(f"plot written to {visible(plot)}", markup=False, highlight=False)


def _bench_parallel(
    specs: list[FFNSpec],
    tp: int,
    ep: int,
    batch: int,
    seq_len: str,
    dtype: str,
    device: str,
    seed: int,
    warmup_ms: float,
    repeats: int | None,
    json: bool,
) -> None:
    """Time one sharded forward across tp or ep ranks (spawned, or joined under torchrun)."""
    from ffn_cli.parallel import check_parallel, is_primary_process, time_parallel_forward
    from ffn_cli.render.parallel import parallel_timing_json, render_parallel_timing

    seq_lens, dtypes = parse_int_list("seq_len", seq_len), parse_list("dtype", dtype)
    if len(specs) != 1 or len(seq_lens) != 1 or len(dtypes) != 1:
        raise FFNError("tp" if tp != 1 else "ep", max(tp, ep), _("times one case: give one variant, d_model, seq_len and dtype"))
    check_parallel(specs[0], tp=tp, ep=ep)
    timing = time_parallel_forward(
        specs[0],
        max(tp, ep),
        mode="tp" if tp > 1 else "ep",
        batch=batch,
        seq_len=seq_lens[0],
        dtype=dtypes[0],
        device=device,
        seed=seed,
        warmup_ms=warmup_ms,
        repeats=20 if repeats is None else repeats,
    )
    if not is_primary_process():
        return
    if json:
        emit_json(parallel_timing_json(timing))
    else:
        console.print(render_parallel_timing(timing))


def _run_with_progress(work: Callable[[ProgressFn | None], BenchReport]) -> BenchReport:
    """A transient progress line on stderr. auto_refresh is off, so no refresh thread exists:
    it redraws only when the core reports a step, and the core never reports while timing."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if not err_console.is_terminal:  # nobody to show it to (a pipe, a log, a test)
        return work(None)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        auto_refresh=False,
    ) as progress:
        task = progress.add_task("starting", total=None)

        def on_progress(done: int, total: int, what: str) -> None:
            progress.update(task, completed=done, total=total, description=what)
            progress.refresh()

        return work(on_progress)
