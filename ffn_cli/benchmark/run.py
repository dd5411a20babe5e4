"""run_bench: every (dtype, spec, seq_len, impl[, checkpoint]) case of a sweep → one BenchReport."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace

import torch

from ffn_cli.accounting import DTYPE_BYTES, activation_bytes
from ffn_cli.benchmark.calibrate import calibrate
from ffn_cli.benchmark.case import Case, Sweep, bench_case, ceilings, measured_ceilings, preflight_case
from ffn_cli.benchmark.config import MAX_REPEATS, BenchConfig
from ffn_cli.benchmark.environment import capture_env, cpu_threads
from ffn_cli.benchmark.estimate import SHOWN_FROM_S, SweepEstimate, estimate_sweep
from ffn_cli.benchmark.forecast import profile_for, unread_profile
from ffn_cli.benchmark.implementations import IMPLS, Impl
from ffn_cli.benchmark.plan import DEFAULT_MAX_CASES, SweepPlan
from ffn_cli.benchmark.result import BenchReport, BenchResult, CheckpointDelta
from ffn_cli.benchmark.stats import NOISY_REL_IQR
from ffn_cli.benchmark.timing import cache_flush_bytes
from ffn_cli.device import resolve_device_dtype
from ffn_cli.device_name import parse_device_name
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.hardware import find_gpu
from ffn_cli.hardware.profile import PROFILE_NAME
from ffn_cli.i18n import N_, Message, _
from ffn_cli.spec import FFNSpec, check_int

__all__ = ["EstimateFn", "ProgressFn", "run_bench"]

ProgressFn = Callable[[int, int, str], None]  # (cases done, cases in all, what runs next)
EstimateFn = Callable[[SweepEstimate], None]  # told once, before the first case, of a sweep that will take a while


def run_bench(
    *,
    specs: Sequence[FFNSpec],
    dtypes: Sequence[str] = ("float32",),
    batch: int = 1,
    seq_lens: Sequence[int] = (512,),
    impls: Sequence[Impl] = (IMPLS["eager"],),
    config: BenchConfig | None = None,
    on_progress: ProgressFn | None = None,
    max_cases: int = DEFAULT_MAX_CASES,
    on_estimate: EstimateFn | None = None,
) -> BenchReport:
    """Time every (dtype, spec, seq_len, impl[, checkpoint]) case; one report for the sweep.

    on_progress(done, total, what) is called between cases and phases, never while timing.
    More than `max_cases` cases are refused before any is built; every case is checked against
    the free memory before the first is timed. on_estimate hears how long the sweep will take,
    before the first case, when that is SHOWN_FROM_S or more.
    """
    config = config or BenchConfig()
    _check_device(config.device)
    check_int("batch", batch)
    for s in seq_lens:
        check_int("seq_len", s)
    device, _dtype = resolve_device_dtype(config.device, dtypes[0] if dtypes else "float32")
    for dtype in dtypes:
        resolve_device_dtype(config.device, dtype)
    plan = SweepPlan(specs, impls, dtypes, batch, seq_lens, config.checkpoint)
    plan.check_size(max_cases)  # by arithmetic: no case exists yet
    if plan.count == 0:
        raise FFNError("impl", ",".join(i.name for i in impls), _("nothing to run: {skipped}").format(skipped="; ".join(plan.skipped)))
    progress = on_progress or (lambda done, total, what: None)
    on_device = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
    with cpu_threads(device, config.threads), on_device:
        return _run_sweep(plan, device, config, progress, on_estimate)


def _check_device(name: str) -> None:
    if parse_device_name(name)[0] == "meta":
        raise FFNError("device", name, _("bench runs real computation: use cpu, cuda or cuda:N"))
    if parse_device_name(name)[0] == "cuda" and not torch.cuda.is_available():
        raise FFNRuntimeError(_("--device {name}: CUDA is not available here; use --device cpu").format(name=name))


def _run_sweep(
    plan: SweepPlan, device: torch.device, config: BenchConfig, progress: ProgressFn, on_estimate: EstimateFn | None
) -> BenchReport:
    flush_bytes = cache_flush_bytes(device, config.cache)
    env = capture_env(device, config.cache, flush_bytes)
    flush = torch.empty(flush_bytes, dtype=torch.int8, device=device) if flush_bytes else None
    sweep = Sweep(config, device, env, flush, {})
    total, dtypes = plan.count, plan.dtypes
    for case in plan.cases():  # a case that cannot fit stops the sweep before anything is timed
        preflight_case(case, sweep)
    if config.calibrate:
        for dtype in dtypes:
            progress(0, total, f"calibrating {dtype} GEMM and copy")
            sweep.calibrations[dtype] = calibrate(device, resolve_device_dtype(str(device), dtype)[1], dtype, config)
    if on_estimate is not None:
        estimate = estimate_sweep(plan.cases(), config, lambda dtype: _measured_tflops(sweep, dtype), device)
        if estimate.seconds >= SHOWN_FROM_S:
            on_estimate(estimate)
    results = []
    for i, case in enumerate(plan.cases()):
        progress(i, total, ("compiling and timing " if case.impl.compile_mode else "timing ") + case.label)
        results.append(bench_case(case, sweep))
    progress(total, total, "done")
    results = _mark_fastest(results)
    return BenchReport(
        results=tuple(results),
        env=env,
        calibrations=tuple(sweep.calibrations.values()),
        checkpoint=tuple(_checkpoint_deltas(list(zip(plan.cases(), results, strict=True)))),
        skipped=tuple(plan.skipped),
        warnings=tuple(_warnings(results, sweep, dtypes)),
    )


def _measured_tflops(sweep: Sweep, dtype: str) -> float | None:
    """This device's GEMM rate as measured already (--calibrate, ffn hardware --measure), or None."""
    measured = measured_ceilings(sweep, dtype)
    return measured[0] if measured is not None else None


def _mark_fastest(results: list[BenchResult]) -> list[BenchResult]:
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, r in enumerate(results):
        groups.setdefault((r.variant, r.d_model, r.d_ff, r.batch, r.seq_len, r.dtype, r.mode, r.checkpoint), []).append(i)
    out = list(results)
    for members in groups.values():
        best = min(members, key=lambda i: results[i].median_ms)  # a case's only implementation is its fastest
        out[best] = replace(out[best], fastest=True)
    return out


def _checkpoint_deltas(pairs: Sequence[tuple[Case, BenchResult]]) -> list[CheckpointDelta]:
    base = {c: r for c, r in pairs if not c.checkpoint}
    deltas = []
    for case, r in pairs:
        b = base.get(replace(case, checkpoint=False)) if case.checkpoint else None
        if b is None:
            continue
        saved = None if b.extra_mem_bytes is None or r.extra_mem_bytes is None else b.extra_mem_bytes - r.extra_mem_bytes
        # Checkpointing keeps only the FFN's input; everything else autograd would keep is saved.
        kept = activation_bytes(case.spec, case.tokens, case.dtype) - case.tokens * case.spec.d_model * DTYPE_BYTES[case.dtype]
        deltas.append(
            CheckpointDelta(
                label=b.label,
                base_median_ms=b.median_ms,
                ckpt_median_ms=r.median_ms,
                time_cost_pct=100 * (r.median_ms / b.median_ms - 1),
                base_extra_mem_bytes=b.extra_mem_bytes,
                ckpt_extra_mem_bytes=r.extra_mem_bytes,
                mem_saved_bytes=saved,
                est_saved_bytes=kept,
                model_flops=r.flops,
                hardware_flops=r.hardware_flops,
                hardware_forwards=3 * r.hardware_flops / r.flops if r.flops else 0.0,
            )
        )
    return deltas


def _some(labels: Sequence[str], shown: int = 3, marked: str = "noisy") -> Message:
    """A few cases by name and a count of the rest: a warning stays a line or two on a long sweep."""
    more = len(labels) - shown
    named = ", ".join(labels[:shown])
    if more <= 0:
        return Message.of(N_("{named}"), named=named)
    return Message.of(
        N_("{named} and {more} more of {total} (`--json` marks each: {marked})"), named=named, more=more, total=len(labels), marked=marked
    )


def _named(labels: Sequence[str], shown: int = 3) -> Message:
    more = len(labels) - shown
    named = ", ".join(labels[:shown])
    return Message.of(N_("{named} and {more} more"), named=named, more=more) if more > 0 else Message.of(N_("{named}"), named=named)


def _warnings(results: Sequence[BenchResult], sweep: Sweep, dtypes: Sequence[str]) -> list[Message]:
    """What makes the times less than they seem, each a Message: English in --json, the reader's
    language in the table."""
    notes: list[Message] = []
    noisy = [r.label for r in results if r.noisy]
    if noisy:
        if sweep.config.repeats is None:
            words = N_("IQR over {share} of the median (busy machine or too few calls; close other programs or raise --min-time): {cases}")
        else:  # --min-time beside --repeats is refused: name the option this run was given
            words = N_("IQR over {share} of the median (busy machine or too few calls; close other programs or raise --repeats): {cases}")
        notes.append(Message.of(words, share=f"{NOISY_REL_IQR:.0%}", cases=_some(noisy)))
    capped = [r.label for r in results if sweep.config.repeats is None and r.samples >= MAX_REPEATS]
    if capped:
        words = N_("--min-time {seconds} s: {cases} stopped at the {most} timed calls ffn makes per case, in less time than asked")
        notes.append(Message.of(words, seconds=f"{sweep.config.min_time_ms / 1e3:g}", cases=_named(capped), most=f"{MAX_REPEATS:,}"))
    env = sweep.env
    cpu = sweep.device.type == "cpu"
    if cpu and env.threads > env.cpu_count:
        words = N_("{threads} threads on {cpus} available CPUs: threads compete, times are not representative")
        notes.append(Message.of(words, threads=env.threads, cpus=env.cpu_count))
    if cpu and env.load_avg_1m is not None and env.load_avg_1m > env.cpu_count:
        words = N_("the machine is busy (load average {load} on {cpus} CPUs): CPU times include waiting for a core")
        notes.append(Message.of(words, load=f"{env.load_avg_1m:.1f}", cpus=env.cpu_count))
    profile = profile_for(sweep.device.type, sweep.config.gpu)
    if cpu and profile is not None and profile.threads != env.threads and any(r.predicted_ms is not None for r in results):
        words = N_(
            "the profile was measured at --threads {measured} and this run uses --threads {threads}: its forecasts assume "
            "{measured} (ffn hardware --measure --threads {threads}, or ffn bench --threads {measured})"
        )
        notes.append(Message.of(words, measured=profile.threads, threads=env.threads))
    if sweep.config.gpu is None and (unread := unread_profile()) is not None:
        notes.append(Message.of(N_("no forecast: {why}"), why=unread))
    above = [r for r in results if r.above_peak]
    if above:
        words = N_(
            "faster than the peak it is measured against, so that peak is no upper bound here "
            "(a datasheet peak too low, or a calibration the machine's load held back: --calibrate again, or raise --min-time): {cases}"
        )
        notes.append(Message.of(words, cases=_some([r.label for r in above], marked="above_peak")))
    named = find_gpu(sweep.config.gpu) if sweep.config.gpu is not None and sweep.config.gpu != PROFILE_NAME else None
    for dtype in dtypes:
        if ceilings(sweep, dtype)[0] is not None:
            continue
        if named is not None and not named.tflops:  # a row the sources disagree on: say which row and why
            words = N_(
                "no known peak for {gpu} (--gpu): the table holds none of its peak rates ({note}); --calibrate measures this machine's"
            )
            notes.append(Message.of(words, gpu=named.name, note=Message.separated(named.notes)))
            break
        words = N_("no known peak for {device} in {dtype}: --calibrate measures one (for % of peak and the bound)")
        notes.append(Message.of(words, device=named.name if named is not None else env.device_name, dtype=dtype))
    return notes
