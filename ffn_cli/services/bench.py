"""`ffn bench` and `ffn_cli.bench(...)`: a checked BenchRequest timed, a sweep of cases or one
sharded forward under --tp / --ep, returned as services/results.py's BenchSweep or ShardedTiming.
Imports torch, after checking the folders it writes to: hence the imports inside functions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.services.environment import require_cache_dirs, require_temp_dir
from ffn_cli.services.results import BenchSweep, ShardedTiming

if TYPE_CHECKING:
    from ffn_cli.benchmark.run import EstimateFn, ProgressFn
    from ffn_cli.configs.layer_select import LayerChoice
    from ffn_cli.requests.bench import BenchRequest
    from ffn_cli.spec import FFNSpec

__all__ = ["bench"]


def bench(
    request: BenchRequest, on_progress: ProgressFn | None = None, on_estimate: EstimateFn | None = None
) -> BenchSweep | ShardedTiming:
    """The timings `ffn bench` answers for `request`; `on_progress` hears of each step of a sweep
    (never while timing), `on_estimate` how long a long sweep will take."""
    require_temp_dir()  # before torch is imported
    from ffn_cli.benchmark.implementations import IMPLS, impl_for

    if request.impl is not None:  # names the request checked; `all`: every one
        impls = list(IMPLS.values()) if request.impl == ("all",) else [IMPLS[name] for name in request.impl]
    else:
        impls = [impl_for(fused=request.fused, compile_mode=request.compile_mode if request.compile_asked else None)]
    if any(i.compile_mode for i in impls):
        require_cache_dirs(("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"), _("torch.compile writes its kernels there"))
    choice = _model_layer(request)
    specs = [choice.ffn] if choice is not None else list(request.specs)
    # A model's layer runs in its own dtype (the config's) unless --dtype names the ones to time.
    dtypes = (choice.dtype,) if choice is not None and "dtype" not in request.given else request.dtype
    if request.kind == "parallel":
        return _parallel(request, specs, dtypes)
    return _sweep(request, specs, dtypes, impls, choice, on_progress, on_estimate)


def _model_layer(request: BenchRequest) -> LayerChoice | None:
    """The layer of the model named (--preset / --config / --model), with the options given
    over its values; None when none is named."""
    if not request.names_model:
        return None
    from ffn_cli.configs.layer_select import select_layer  # the model readers load with a model
    from ffn_cli.configs.source import load_model
    from ffn_cli.configs.unknown import UnknownModelType

    try:
        loaded = load_model(preset=request.preset, config=request.config, model=request.model, revision=request.revision)
        return select_layer(loaded, request.layer, request.layer_options(), default_dtype="float32")
    except UnknownModelType as unknown:
        raise FFNRuntimeError(
            _(
                "model_type {value!r}: ffn bench times the FFNs it builds from the families it reads; ffn "
                "trace --config traces this model's own FFN module, ffn params --config counts it"
            ).format(value=unknown.value)
        ) from None


def _sweep(
    request: BenchRequest,
    specs: list[FFNSpec],
    dtypes: tuple[str, ...],
    impls: list,
    choice: LayerChoice | None,
    on_progress: ProgressFn | None,
    on_estimate: EstimateFn | None,
) -> BenchSweep:
    from ffn_cli.benchmark.run import run_bench

    config = request.bench_config(gpu=None if request.gpu is None else resolve_gpu(request.gpu).key)
    report = run_bench(
        specs=specs,
        dtypes=list(dtypes),
        batch=request.batch,
        seq_lens=list(request.seq_len),
        impls=impls,
        config=config,
        on_progress=on_progress,
        max_cases=request.max_cases,
        on_estimate=on_estimate,
    )
    return BenchSweep(report, choice)


def _parallel(request: BenchRequest, specs: list[FFNSpec], dtypes: tuple[str, ...]) -> ShardedTiming:
    """One sharded forward across tp or ep ranks (spawned, or joined under torchrun)."""
    from ffn_cli.parallel import check_parallel
    from ffn_cli.parallel.run import is_primary_process, time_parallel_forward

    tp, ep = request.tp, request.ep
    seq_lens = request.seq_len
    if len(specs) != 1 or len(seq_lens) != 1 or len(dtypes) != 1:
        raise FFNError("tp" if tp != 1 else "ep", max(tp, ep), _("times one case: give one variant, d_model, seq_len and dtype"))
    check_parallel(specs[0], tp=tp, ep=ep)
    timing = time_parallel_forward(
        specs[0],
        max(tp, ep),
        mode="tp" if tp > 1 else "ep",
        batch=request.batch,
        seq_len=seq_lens[0],
        dtype=dtypes[0],
        device=request.device,
        seed=request.seed,
        warmup_ms=request.warmup_ms,
        repeats=20 if request.repeats is None else request.repeats,
        **({} if request.rank_timeout is None else {"timeout_s": request.rank_timeout}),
    )
    return ShardedTiming(timing, shown=is_primary_process())
