"""Run an FFN split over N ranks: check it against one device (`run_parallel`) or time it
(`time_parallel_forward`). Under torchrun (RANK, WORLD_SIZE, LOCAL_RANK set) this process is one
rank: it joins the group, and every rank returns the gathered result.

`job` validates the request, `rank` is what each rank does, `launch` starts and collects them.
"""

from __future__ import annotations

from ffn_cli.accounting import total_params
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.parallel.job import Mode, ParallelJob, check_devices, is_primary_process, make_input, make_job, under_torchrun
from ffn_cli.parallel.launch import run_job
from ffn_cli.parallel.rank import Checked
from ffn_cli.parallel.result import ParallelResult, ParallelTiming, tolerance_for
from ffn_cli.spec import FFNSpec, check_int
from ffn_cli.values import is_finite_number

__all__ = ["check_devices", "is_primary_process", "make_input", "run_parallel", "time_parallel_forward", "under_torchrun"]


def _result(job: ParallelJob, checked: list[Checked]) -> ParallelResult:
    ranks = tuple(c.rank for c in checked)
    worst = max(r.max_abs_diff for r in ranks)
    return ParallelResult(
        mode=job.mode,
        spec=job.spec,
        world_size=job.world_size,
        backend=job.backend,
        device=job.device_type,
        dtype=job.dtype,
        batch=job.batch,
        seq_len=job.seq_len,
        seed=job.seed,
        input_shape=(job.batch, job.seq_len, job.spec.d_model),
        output_shape=(job.batch, job.seq_len, job.spec.d_model),
        unsharded_params=total_params(job.spec),
        ranks=ranks,
        max_abs_diff_vs_unsharded=worst,
        tolerance=tolerance_for(job.dtype, checked[0].scale),
        launcher="torchrun" if under_torchrun() else "spawn",
        unsharded_tokens_per_expert=checked[0].unsharded_tokens_per_expert,
    )


def run_parallel(
    spec: FFNSpec,
    world_size: int,
    *,
    mode: Mode,
    batch: int = 2,
    seq_len: int = 5,
    dtype: str = "float32",
    device: str = "cpu",
    seed: int = 0,
    timeout_s: float = 120.0,
) -> ParallelResult:
    """The FFN split over `world_size` ranks and checked against one device: `tp`, Megatron
    tensor parallelism of a dense, gated or sparse FFN; `ep`, expert parallelism of a top-k MoE
    (experts/N per rank, tokens exchanged all-to-all)."""
    if mode not in ("tp", "ep"):
        raise FFNError("mode", mode, _("choose tp or ep"))
    job = make_job(mode, spec, world_size, batch=batch, seq_len=seq_len, dtype=dtype, device=device, seed=seed, timeout_s=timeout_s)
    return _result(job, run_job(job))


def time_parallel_forward(
    spec: FFNSpec,
    world_size: int,
    *,
    mode: Mode = "tp",
    batch: int = 2,
    seq_len: int = 5,
    dtype: str = "float32",
    device: str = "cpu",
    seed: int = 0,
    warmup_ms: float = 25.0,
    repeats: int = 20,
    timeout_s: float = 300.0,
) -> ParallelTiming:
    """Median ms of the sharded forward on every rank (CUDA events and an L2 flush on CUDA)."""
    if mode not in ("tp", "ep"):
        raise FFNError("mode", mode, _("choose tp or ep"))
    check_int("repeats", repeats, maximum=100_000)
    if not is_finite_number(warmup_ms) or not 0 <= warmup_ms <= 600_000:
        raise FFNError("warmup_ms", warmup_ms, _("must be a number of milliseconds in [0, 600000]"))
    kw = {"batch": batch, "seq_len": seq_len, "dtype": dtype, "device": device, "seed": seed, "timeout_s": timeout_s}
    job = make_job(mode, spec, world_size, warmup_ms=float(warmup_ms), repeats=repeats, **kw)
    ranks = tuple(run_job(job))
    return ParallelTiming(
        mode=mode,
        spec=spec,
        world_size=world_size,
        backend=job.backend,
        device=job.device_type,
        dtype=dtype,
        batch=batch,
        seq_len=seq_len,
        ranks=ranks,
        timer="cuda events" if job.device_type == "cuda" else "perf_counter",
    )
