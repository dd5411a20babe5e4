"""Launch N ranks (or join torchrun's), shard the FFN, run it, and check it against one device.

Spawned ranks fork from a forkserver that has imported torch once, talk over gloo (CPU) or NCCL
(CUDA, one device per rank) on a free localhost port, and report back through a queue before
they tear their group down; they are always stopped before the launcher returns. Under
torchrun (RANK, WORLD_SIZE, LOCAL_RANK set) this process is one rank: it joins the group, and
every rank returns the gathered result.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import Tensor

from ffn_cli.accounting import DTYPE_BYTES, total_params
from ffn_cli.device import preflight
from ffn_cli.device_name import parse_device_name
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.modules import MoEFFN, build_ffn, resolve_dtype
from ffn_cli.parallel.accounting import MAX_WORLD_SIZE, ShardTensor, check_parallel, ep_split, tp_split
from ffn_cli.parallel.expert import ep_forward
from ffn_cli.parallel.lifecycle import Launcher, watch_launcher
from ffn_cli.parallel.result import ParallelResult, ParallelTiming, RankResult, RankTiming, tolerance_for
from ffn_cli.parallel.shard import shard_expert_parallel, shard_tensor_parallel
from ffn_cli.parallel.steps import StepLog
from ffn_cli.parallel.tensor import tp_forward
from ffn_cli.spec import FFNSpec, check_int
from ffn_cli.variants import SplitKind

__all__ = [
    "check_devices",
    "is_primary_process",
    "make_input",
    "run_expert_parallel",
    "run_tensor_parallel",
    "time_parallel_forward",
    "under_torchrun",
]

_TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
# Spawned CPU ranks beyond this only fight over cores: gloo ranks are processes on this machine.
MAX_CPU_RANKS = 64
# L2 flush between timed CUDA calls, as triton.testing.do_bench: larger than any GPU's L2.
_FLUSH_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class _Job:
    mode: str  # "tp" or "ep"
    spec: FFNSpec
    world_size: int
    batch: int
    seq_len: int
    dtype: str
    device_type: str  # "cpu" or "cuda"
    seed: int
    timeout_s: float
    warmup_ms: float = 0.0
    repeats: int = 0  # > 0: time the forward instead of checking it

    @property
    def backend(self) -> str:
        return "nccl" if self.device_type == "cuda" else "gloo"


def under_torchrun() -> bool:
    """True when torchrun (or any launcher setting RANK, WORLD_SIZE, LOCAL_RANK) started this process."""
    return all(name in os.environ for name in _TORCHRUN_ENV)


def is_primary_process() -> bool:
    """Whether this process should print: always outside torchrun, rank 0 under it."""
    return not under_torchrun() or os.environ.get("RANK") == "0"


def make_input(batch: int, seq_len: int, d_model: int, *, seed: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """The (B, T, d) input every rank and the unsharded module see: drawn on the CPU from `seed`."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(batch, seq_len, d_model, generator=generator).to(device=device, dtype=dtype)


def _device_type(device: str, option: str) -> str:
    kind = parse_device_name(device)[0]
    if kind in ("cpu", "cuda"):
        return kind
    raise FFNError("device", device, f"--{option} runs real ranks: use cpu (gloo) or cuda (NCCL, one device per rank)")


def check_devices(world_size: int, device_type: str, option: str = "tp") -> None:
    """Refuse what cannot run here: no CUDA, or more NCCL ranks than visible devices."""
    if device_type == "cpu":
        if world_size > MAX_CPU_RANKS:
            raise FFNRuntimeError(f"--{option} {world_size}: at most {MAX_CPU_RANKS} gloo ranks on one machine")
        return
    if not torch.cuda.is_available() or not dist.is_nccl_available():
        raise FFNRuntimeError(f"--{option} {world_size} --device cuda: CUDA with NCCL is not available here; use --device cpu (gloo)")
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world_size)) if under_torchrun() else world_size
    count = torch.cuda.device_count()
    if local > count:
        message = f"--{option} {world_size}: NCCL needs one CUDA device per rank and {count} are visible; use --{option} {count} or fewer"
        raise FFNRuntimeError(message)


def _make_job(mode: str, spec: FFNSpec, world_size: int, **kw: Any) -> _Job:
    check_int(mode, world_size, maximum=MAX_WORLD_SIZE)
    check_parallel(spec, **{mode: world_size})
    check_int("batch", kw["batch"])
    check_int("seq_len", kw["seq_len"])
    check_int("seed", kw["seed"], minimum=0, maximum=2**63 - 1)
    resolve_dtype(kw["dtype"])
    device_type = _device_type(kw.pop("device"), mode)
    check_devices(world_size, device_type, mode)
    _preflight(spec, world_size, device_type, kw["dtype"])
    if under_torchrun() and int(os.environ["WORLD_SIZE"]) != world_size:
        raise FFNError(mode, world_size, f"must equal WORLD_SIZE={os.environ['WORLD_SIZE']} set by torchrun (--nproc-per-node)")
    return _Job(mode, spec, world_size, device_type=device_type, **kw)


def _preflight(spec: FFNSpec, world_size: int, device_type: str, dtype: str) -> None:
    """Every rank builds the full module to cut its shard from: N copies on the CPU, one per GPU.

    A launcher spawning CUDA ranks skips it, so that it never creates a CUDA context of its own.
    """
    if device_type == "cuda" and not under_torchrun():
        return
    copies = world_size if device_type == "cpu" and not under_torchrun() else 1
    needed = 2 * copies * total_params(spec) * DTYPE_BYTES[dtype]  # the full weights and the shard, with margin
    device = torch.device("cpu") if device_type == "cpu" else torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    preflight(needed, device, f"{world_size} ranks of {spec.variant} (each builds the full module)", meta_hint=False)


# --- one rank ---------------------------------------------------------------------------------


def _shard_tensors(spec: FFNSpec, shard: dict[str, Tensor], full_shapes: dict[str, tuple[int, ...]], mode: str) -> tuple[ShardTensor, ...]:
    def split(name: str) -> SplitKind:
        return tp_split(spec, name) if mode == "tp" else ep_split(name)[0]

    # Parameters only: the sparse variant's mask is a buffer, as param_tensors counts.
    return tuple(ShardTensor(n, tuple(t.shape), full_shapes[n], split(n)) for n, t in shard.items() if n in full_shapes)


def _prepare(job: _Job, rank: int, device: torch.device) -> tuple[dict[str, Tensor], Tensor, Tensor, Any, dict[str, tuple[int, ...]]]:
    """Build the unsharded module from the seed, run it once, and cut this rank's shard from it."""
    module = build_ffn(job.spec, device=device, dtype=job.dtype, seed=job.seed).eval()
    x = make_input(job.batch, job.seq_len, job.spec.d_model, seed=job.seed, dtype=resolve_dtype(job.dtype), device=device)
    with torch.no_grad():
        reference = module(x)  # (B, T, d)
    dispatch = module.last_dispatch if isinstance(module, MoEFFN) else None
    full_shapes = {n: tuple(p.shape) for n, p in module.named_parameters()}
    cut = shard_tensor_parallel if job.mode == "tp" else shard_expert_parallel
    shard = cut(module.state_dict(), job.spec, rank, job.world_size)
    del module  # the shard holds copies: the full weights go now
    return shard, x, reference, dispatch, full_shapes


def _forward(job: _Job, shard: dict[str, Tensor], x: Tensor, rank: int, log: StepLog) -> tuple[Tensor, Tensor, Any]:
    """This rank's input and output; EP ranks hold a contiguous block of the B·T tokens."""
    if job.mode == "tp":
        return x, tp_forward(shard, job.spec, x, log), None
    tokens = torch.tensor_split(x.reshape(-1, x.shape[-1]), job.world_size)[rank]  # (n_r, d)
    out, stats = ep_forward(shard, job.spec, tokens, rank=rank, world_size=job.world_size, total_tokens=job.batch * job.seq_len, log=log)
    return tokens, out, stats


@dataclass(frozen=True)
class _Checked:
    """A rank's result, with what the one-device module routed and the scale of its output."""

    rank: RankResult
    unsharded_tokens_per_expert: tuple[int, ...]
    scale: float


def _check_rank(job: _Job, rank: int, device: torch.device) -> _Checked:
    shard, x, reference, dispatch, full_shapes = _prepare(job, rank, device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    log = StepLog()
    with torch.no_grad():
        inputs, out, stats = _forward(job, shard, x, rank, log)
    expected = reference if job.mode == "tp" else torch.tensor_split(reference.reshape(-1, reference.shape[-1]), job.world_size)[rank]
    diff = float((out.double() - expected.double()).abs().max()) if out.numel() else 0.0
    scale = float(reference.double().abs().max())
    tensors = _shard_tensors(job.spec, shard, full_shapes, job.mode)
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
    return _Checked(result, tuple(dispatch.tokens_per_expert) if dispatch else (), scale)


def _barrier(device: torch.device) -> None:
    if device.type == "cuda":
        dist.barrier(device_ids=[device.index])
        torch.cuda.synchronize(device)
    else:
        dist.barrier()


def _time_rank(job: _Job, rank: int, device: torch.device) -> RankTiming:
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
    for _ in range(int(warm.item())):
        call()
    times = []
    for _ in range(job.repeats):
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
def _process_group(job: _Job, device: torch.device) -> Iterator[None]:
    """This rank inside the process group: created here unless one exists (then left as found).

    A group created here is torn down only after every rank has arrived: destroy_process_group
    racing a peer's last collective can hang (seen with gloo on torch 2.4).
    """
    if device.type == "cuda":
        torch.cuda.set_device(device)
    created = not dist.is_initialized()
    if created:
        init: dict[str, Any] = {"device_id": device} if device.type == "cuda" else {}
        dist.init_process_group(job.backend, timeout=timedelta(seconds=job.timeout_s), **init)
    try:
        if dist.get_world_size() != job.world_size:
            raise FFNError(job.mode, job.world_size, f"must equal the process group's world size ({dist.get_world_size()})")
        yield
        if created:
            _barrier(device)
    finally:
        if created:
            dist.destroy_process_group()


def _rank_device(job: _Job, local_rank: int) -> torch.device:
    return torch.device("cuda", local_rank) if job.device_type == "cuda" else torch.device("cpu")


def _rank_work(job: _Job, rank: int, device: torch.device) -> Any:
    """This rank's timing (when repeats are asked for) or its checked result."""
    return _time_rank(job, rank, device) if job.repeats else _check_rank(job, rank, device)


def _in_group(job: _Job, rank: int, local_rank: int) -> list[Any]:
    """Run this rank under torchrun, and gather every rank's result."""
    device = _rank_device(job, local_rank)
    with _process_group(job, device):
        everyone: list[Any] = [None] * job.world_size
        dist.all_gather_object(everyone, _rank_work(job, rank, device))
    return everyone


# --- spawning -----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawned_rank(job: _Job, rank: int, port: int, queue: Any, launcher: Launcher | None = None) -> None:
    """Entry of a spawned rank: the torchrun environment by hand, then report one message."""
    if launcher is not None:
        watch_launcher(launcher)  # never outlive the launcher, however it ends
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(job.world_size),
        LOCAL_RANK=str(rank),
        LOCAL_WORLD_SIZE=str(job.world_size),
    )
    if job.device_type == "cpu":
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // job.world_size))  # ranks share the cores
    # Every outcome is reported before the group is torn down: a peer closing its connections
    # would otherwise mask this rank's error, and the launcher need not wait for a teardown.
    reported = False
    try:
        device = _rank_device(job, rank)
        with _process_group(job, device):
            try:
                message = ("ok", rank, _rank_work(job, rank, device))
            except BaseException as exc:
                message = _error_message(rank, exc)
                raise
            finally:
                queue.put(message)
                reported = True
    except BaseException as exc:  # the group itself failed: init, size check or teardown
        if not reported:
            queue.put(_error_message(rank, exc))


def _error_message(rank: int, exc: BaseException) -> tuple[str, int, Any]:
    if isinstance(exc, FFNError):
        return ("usage", rank, (exc.option, exc.value, exc.allowed))
    if isinstance(exc, FFNRuntimeError):
        return ("runtime", rank, str(exc))
    first_line = (str(exc).strip().splitlines() or [""])[0]
    return ("crash", rank, f"{type(exc).__name__}: {first_line}")


def _raise_from(kind: str, rank: int, payload: Any) -> None:
    if kind == "usage":
        raise FFNError(*payload)
    if kind == "runtime":
        raise FFNRuntimeError(f"rank {rank}: {payload}")
    raise FFNRuntimeError(f"rank {rank} failed: {payload}")


def _collect(job: _Job, procs: list[Any], queue: Any) -> list[Any]:
    """One message per rank, in rank order; the first error, a dead rank or the deadline stops all."""
    deadline = time.monotonic() + job.timeout_s
    results: dict[int, Any] = {}
    while len(results) < job.world_size:
        if not queue.empty():
            kind, rank, payload = queue.get()
            if kind != "ok":
                _raise_from(kind, rank, payload)
            results[rank] = payload
            continue
        # A rank that has reported may still die in its teardown: only silent ranks count.
        dead = [(i, p.exitcode) for i, p in enumerate(procs) if i not in results and p.exitcode not in (None, 0)]
        if dead and queue.empty():
            raise FFNRuntimeError(f"rank {dead[0][0]} exited with code {dead[0][1]} before reporting")
        if time.monotonic() > deadline:
            raise FFNRuntimeError(f"the {job.world_size} ranks did not finish within {job.timeout_s:g} s")
        time.sleep(0.02)
    return [results[r] for r in range(job.world_size)]


def _stop(procs: list[Any]) -> None:
    procs = [p for p in procs if p.pid is not None]  # a failed start leaves the rest unstarted
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join()


def _spawn(job: _Job) -> list[Any]:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])  # torch is imported once, in the server, not per rank
    queue = ctx.SimpleQueue()
    port = _free_port()
    procs = [ctx.Process(target=_spawned_rank, args=(job, r, port, queue, Launcher.current()), daemon=True) for r in range(job.world_size)]
    try:
        for p in procs:
            p.start()
        return _collect(job, procs, queue)
    finally:
        _stop(procs)
        queue.close()


def _run(job: _Job) -> list[Any]:
    if under_torchrun():
        return _in_group(job, int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]))
    return _spawn(job)


# --- public entry points ------------------------------------------------------------------------


def _result(job: _Job, checked: list[_Checked]) -> ParallelResult:
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


def run_tensor_parallel(
    spec: FFNSpec,
    world_size: int,
    *,
    batch: int = 2,
    seq_len: int = 5,
    dtype: str = "float32",
    device: str = "cpu",
    seed: int = 0,
    timeout_s: float = 120.0,
) -> ParallelResult:
    """Megatron tensor parallelism of a dense, gated or sparse FFN over `world_size` ranks."""
    job = _make_job("tp", spec, world_size, batch=batch, seq_len=seq_len, dtype=dtype, device=device, seed=seed, timeout_s=timeout_s)
    return _result(job, _run(job))


def run_expert_parallel(
    spec: FFNSpec,
    world_size: int,
    *,
    batch: int = 2,
    seq_len: int = 5,
    dtype: str = "float32",
    device: str = "cpu",
    seed: int = 0,
    timeout_s: float = 120.0,
) -> ParallelResult:
    """Expert parallelism of a top-k MoE: experts/N per rank, tokens exchanged all-to-all."""
    job = _make_job("ep", spec, world_size, batch=batch, seq_len=seq_len, dtype=dtype, device=device, seed=seed, timeout_s=timeout_s)
    return _result(job, _run(job))


def time_parallel_forward(
    spec: FFNSpec,
    world_size: int,
    *,
    mode: str = "tp",
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
        raise FFNError("mode", mode, "choose tp or ep")
    check_int("repeats", repeats, maximum=100_000)
    if isinstance(warmup_ms, bool) or not isinstance(warmup_ms, (int, float)) or not 0 <= warmup_ms <= 600_000:
        raise FFNError("warmup_ms", warmup_ms, "must be a number of milliseconds in [0, 600000]")
    kw = {"batch": batch, "seq_len": seq_len, "dtype": dtype, "device": device, "seed": seed, "timeout_s": timeout_s}
    job = _make_job(mode, spec, world_size, warmup_ms=float(warmup_ms), repeats=repeats, **kw)
    ranks = tuple(_run(job))
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
