"""What one rank does: build the unsharded module from the seed, cut its shard, run the
sharded forward (checked against the unsharded output, or timed), inside its process group."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from ffn_cli.errors import FFNError, FFNRuntimeError, exception_line
from ffn_cli.i18n import _
from ffn_cli.modules import build_ffn, resolve_dtype
from ffn_cli.parallel.accounting import ShardTensor
from ffn_cli.parallel.expert import ep_forward
from ffn_cli.parallel.job import ParallelJob, make_input
from ffn_cli.parallel.result import RankResult, RankTiming
from ffn_cli.parallel.shard import shard_expert_parallel, shard_tensor_parallel
from ffn_cli.parallel.steps import StepLog
from ffn_cli.parallel.tensor import tp_forward
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import SplitKind

__all__ = ["Checked", "in_group", "process_group", "rank_device", "rank_work"]

# L2 flush between timed CUDA calls, as triton.testing.do_bench: larger than any GPU's L2.
_FLUSH_BYTES = 256 * 1024 * 1024


def _shard_tensors(spec: FFNSpec, shard: dict[str, Tensor], full_shapes: dict[str, tuple[int, ...]]) -> tuple[ShardTensor, ...]:
    def split(name: str) -> SplitKind:
        return spec.info.shard_split(spec, name)[0]  # d_ff for --tp's one FFN, whole experts for --ep's mixture

    # Parameters only: the sparse variant's mask is a buffer, as param_tensors counts.
    return tuple(ShardTensor(n, tuple(t.shape), full_shapes[n], split(n)) for n, t in shard.items() if n in full_shapes)


def _prepare(
    job: ParallelJob, rank: int, device: torch.device
) -> tuple[dict[str, Tensor], Tensor, Tensor, Any, dict[str, tuple[int, ...]]]:
    """Build the unsharded module from the seed, run it once, and cut this rank's shard from it."""
    module = build_ffn(job.spec, device=device, dtype=job.dtype, seed=job.seed).eval()
    x = make_input(job.batch, job.seq_len, job.spec.d_model, seed=job.seed, dtype=resolve_dtype(job.dtype), device=device)
    with torch.no_grad():
        reference = module(x)  # (B, T, d)
    dispatch = module.last_dispatch  # None but for a routed mixture
    full_shapes = {n: tuple(p.shape) for n, p in module.named_parameters()}
    cut = shard_tensor_parallel if job.mode == "tp" else shard_expert_parallel
    shard = cut(module.state_dict(), job.spec, rank, job.world_size)
    del module  # the shard holds copies: the full weights go now
    return shard, x, reference, dispatch, full_shapes


def _forward(job: ParallelJob, shard: dict[str, Tensor], x: Tensor, rank: int, log: StepLog) -> tuple[Tensor, Tensor, Any]:
    """This rank's input and output; EP ranks hold a contiguous block of the B·T tokens."""
    if job.mode == "tp":
        return x, tp_forward(shard, job.spec, x, log), None
    tokens = torch.tensor_split(x.reshape(-1, x.shape[-1]), job.world_size)[rank]  # (n_r, d)
    out, stats = ep_forward(shard, job.spec, tokens, rank=rank, world_size=job.world_size, total_tokens=job.batch * job.seq_len, log=log)
    return tokens, out, stats


@dataclass(frozen=True)
class Checked:
    """A rank's result, with what the one-device module routed and the scale of its output."""

    rank: RankResult
    unsharded_tokens_per_expert: tuple[int, ...]
    scale: float


def _check_rank(job: ParallelJob, rank: int, device: torch.device) -> Checked:
    shard, x, reference, dispatch, full_shapes = _prepare(job, rank, device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    log = StepLog()
    with torch.no_grad():
        inputs, out, stats = _forward(job, shard, x, rank, log)
    expected = reference if job.mode == "tp" else torch.tensor_split(reference.reshape(-1, reference.shape[-1]), job.world_size)[rank]
    diff = float((out.double() - expected.double()).abs().max()) if out.numel() else 0.0
    scale = float(reference.double().abs().max())
    tensors = _shard_tensors(job.spec, shard, full_shapes)
    extra: dict[str, Any] = {}
    if stats is not None:
        extra = {
            "experts": stats.experts,
            "tokens_per_expert": tuple(stats.tokens_per_expert),
            "tokens_sent": tuple(stats.tokens_sent),
            "tokens_received": tuple(stats.tokens_received),
            "dropped": stats.dropped,
        }
    result = RankResult(
        rank=rank,
        device=str(device),
        input_shape=tuple(inputs.shape),
        output_shape=tuple(out.shape),
        shards=tensors,
        steps=tuple(log.steps),
        comm=tuple(log.comm),
        param_bytes=sum(t.count for t in tensors) * shard[tensors[0].name].element_size(),
        max_abs_diff=diff,
        peak_memory_bytes=int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None,
        tokens=int(inputs.shape[0]) if job.mode == "ep" else job.batch * job.seq_len,
        **extra,
    )
    return Checked(result, tuple(dispatch.tokens_per_expert) if dispatch else (), scale)


def _barrier(device: torch.device) -> None:
    if device.type == "cuda":
        dist.barrier(device_ids=[device.index])
        torch.cuda.synchronize(device)
    else:
        dist.barrier()


def _time_rank(job: ParallelJob, rank: int, device: torch.device) -> RankTiming:
    """Median ms of this rank's sharded forward; every rank runs the same number of calls."""
    shard, x, _reference, _dispatch, _shapes = _prepare(job, rank, device)
    log = StepLog(enabled=False)

    def call() -> None:
        with torch.no_grad():
            _forward(job, shard, x, rank, log)

    cuda = device.type == "cuda"
    flush = torch.empty(_FLUSH_BYTES, dtype=torch.int8, device=device) if cuda else None
    _barrier(device)
    start = time.perf_counter()
    call()
    _barrier(device)
    first_ms = (time.perf_counter() - start) * 1e3
    # Warm-up by time, but agreed: collectives need the same call count on every rank.
    warm = torch.tensor([min(1000, max(1, int(job.warmup_ms / max(first_ms, 1e-3))))], device=device)
    dist.all_reduce(warm, op=dist.ReduceOp.MAX)
    for _call in range(int(warm.item())):
        call()
    times = []
    for _repeat in range(job.repeats):
        if flush is not None:
            flush.zero_()
        _barrier(device)  # start together: a collective waits for the slowest rank
        if cuda:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            call()
            end.record()
            torch.cuda.synchronize(device)
            times.append(begin.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            call()
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return RankTiming(rank, str(device), times[len(times) // 2], times[0], job.repeats)


@contextlib.contextmanager
def process_group(job: ParallelJob, device: torch.device) -> Iterator[None]:
    """This rank inside the process group: created here unless one exists (then left as found).

    A group created here is torn down only after every rank has arrived: destroy_process_group
    racing a peer's last collective can hang (seen with gloo on torch 2.4).
    """
    if device.type == "cuda":
        torch.cuda.set_device(device)
    created = not dist.is_initialized()
    if created:
        _init_group(job, device)
    try:
        if dist.get_world_size() != job.world_size:
            raise FFNError(
                job.mode,
                job.world_size,
                _("must equal the process group's world size ({world_size})").format(world_size=dist.get_world_size()),
            )
        yield
        if created:
            _barrier(device)
    finally:
        if created:
            dist.destroy_process_group()


def _init_group(job: ParallelJob, device: torch.device) -> None:
    """Join the group; a rendezvous that never completes (ranks that never come, as with a
    RANK and WORLD_SIZE left in the shell by an earlier torchrun) is said in one line."""
    init: dict[str, Any] = {"device_id": device} if device.type == "cuda" else {}
    try:
        dist.init_process_group(job.backend, timeout=timedelta(seconds=job.timeout_s), **init)
    except (dist.DistStoreError, dist.DistNetworkError) as exc:
        where = f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}"
        raise FFNRuntimeError(
            _(
                "rank {rank} of {world_size}: the ranks did not meet at {where} within {timeout_s:g} s ({error}); "
                "if RANK and WORLD_SIZE are left from an earlier torchrun, unset them"
            ).format(
                rank=os.environ.get("RANK"),
                world_size=os.environ.get("WORLD_SIZE"),
                where=where,
                timeout_s=job.timeout_s,
                error=exception_line(exc),
            )
        ) from None


def rank_device(job: ParallelJob, local_rank: int) -> torch.device:
    return torch.device("cuda", local_rank) if job.device_type == "cuda" else torch.device("cpu")


def rank_work(job: ParallelJob, rank: int, device: torch.device) -> Any:
    """This rank's timing (when repeats are asked for) or its checked result."""
    return _time_rank(job, rank, device) if job.repeats else _check_rank(job, rank, device)


def in_group(job: ParallelJob, rank: int, local_rank: int) -> list[Any]:
    """Run this rank under torchrun, and gather every rank's result."""
    device = rank_device(job, local_rank)
    with process_group(job, device):
        everyone: list[Any] = [None] * job.world_size
        dist.all_gather_object(everyone, rank_work(job, rank, device))
    return everyone
