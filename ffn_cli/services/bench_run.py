"""`ffn bench`'s timing, once services/bench.py has checked the request and read the model: a
sweep of cases, or one sharded forward under --tp / --ep."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.benchmark.implementations import IMPLS, Impl, impl_for
from ffn_cli.benchmark.run import EstimateFn, ProgressFn, run_bench
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.requests.bench import BenchRequest
from ffn_cli.requests.gpu import resolve_gpu
from ffn_cli.services.environment import require_cache_dirs
from ffn_cli.services.results import BenchSweep, ShardedTiming
from ffn_cli.spec import FFNSpec

if TYPE_CHECKING:
    from ffn_cli.configs.layer_select import LayerChoice

__all__ = ["run_bench_request"]


def run_bench_request(
    request: BenchRequest, choice: LayerChoice | None, on_progress: ProgressFn | None, on_estimate: EstimateFn | None
) -> BenchSweep | ShardedTiming:
    """The request's timings: `choice` is the layer of the model named, if one is."""
    if request.impl is not None:  # names the request checked; `all`: every one
        impls = list(IMPLS.values()) if request.impl == ("all",) else [IMPLS[name] for name in request.impl]
    else:
        impls = [impl_for(fused=request.fused, compile_mode=request.compile_mode if request.compile_asked else None)]
    if any(i.compile_mode for i in impls):
        require_cache_dirs(("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"), _("torch.compile writes its kernels there"))
    specs = [choice.ffn] if choice is not None else list(request.specs)
    # A model's layer runs in its own dtype (the config's) unless --dtype names the ones to time.
    dtypes = (choice.dtype,) if choice is not None and "dtype" not in request.given else request.dtype
    if request.kind == "parallel":
        return _parallel(request, specs, dtypes)
    return _sweep(request, specs, dtypes, impls, choice, on_progress, on_estimate)


def _sweep(
    request: BenchRequest,
    specs: list[FFNSpec],
    dtypes: tuple[str, ...],
    impls: list[Impl],
    choice: LayerChoice | None,
    on_progress: ProgressFn | None,
    on_estimate: EstimateFn | None,
) -> BenchSweep:
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
    # Sharding loads with --tp / --ep: the layout over ranks reads the model spec a sweep never needs.
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
