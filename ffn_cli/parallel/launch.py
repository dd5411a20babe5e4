"""Spawn the ranks (or join torchrun's) and collect one message from each: a result, or the
first error, a dead rank or the deadline, which stops them all.

Spawned ranks fork from a forkserver that has imported torch once, talk over gloo (CPU) or
NCCL (CUDA, one device per rank) on a free localhost port, report back through a queue before
they tear their group down, and watch the launcher's pid (`lifecycle`); they are always
stopped before the launcher returns.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from typing import Any

import torch
import torch.multiprocessing as mp

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.parallel.environment import torchrun_env
from ffn_cli.parallel.job import ParallelJob
from ffn_cli.parallel.lifecycle import Launcher, watch_launcher
from ffn_cli.parallel.rank import in_group, process_group, rank_device, rank_work

__all__ = ["run_job"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawned_rank(job: ParallelJob, rank: int, port: int, queue: Any, launcher: Launcher | None = None) -> None:
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
        device = rank_device(job, rank)
        with process_group(job, device):
            try:
                message = ("ok", rank, rank_work(job, rank, device))
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


# How long a crash report waits for the rank whose death may have caused it to be seen dead.
_BLAME_GRACE_S = 1.0


def _dead(procs: list[Any], results: dict[int, Any]) -> list[tuple[int, int]]:
    """(rank, exit code) of the ranks that died without reporting, those killed by a signal first."""
    dead = [(i, p.exitcode) for i, p in enumerate(procs) if i not in results and p.exitcode not in (None, 0)]
    return sorted(dead, key=lambda d: (d[1] >= 0, d[0]))


def _died(rank: int, code: int) -> FFNRuntimeError:
    if code < 0:
        return FFNRuntimeError(f"rank {rank} was killed by {_signal_name(-code)} before reporting")
    return FFNRuntimeError(f"rank {rank} exited with code {code} before reporting")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _killed_peer(procs: list[Any], results: dict[int, Any]) -> tuple[int, int] | None:
    """A rank killed by a signal, seen within the grace period: when one rank is killed, its
    peers fail on their next collective and may report before its death is seen."""
    until = time.monotonic() + _BLAME_GRACE_S
    while True:
        killed = [d for d in _dead(procs, results) if d[1] < 0]
        if killed or time.monotonic() > until:
            return killed[0] if killed else None
        time.sleep(0.02)


def _collect(job: ParallelJob, procs: list[Any], queue: Any) -> list[Any]:
    """One message per rank, in rank order; the first error, a dead rank or the deadline stops all."""
    deadline = time.monotonic() + job.timeout_s
    results: dict[int, Any] = {}
    while len(results) < job.world_size:
        if not queue.empty():
            kind, rank, payload = queue.get()
            if kind == "crash":  # a broken connection may be a peer's death: blame the dead rank
                killed = _killed_peer(procs, {**results, rank: None})
                if killed is not None:
                    raise _died(*killed)
            if kind != "ok":
                _raise_from(kind, rank, payload)
            results[rank] = payload
            continue
        # A rank that has reported may still die in its teardown: only silent ranks count.
        dead = _dead(procs, results)
        if dead and queue.empty():
            raise _died(*dead[0])
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


def _spawn(job: ParallelJob) -> list[Any]:
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


def run_job(job: ParallelJob) -> list[Any]:
    """Every rank's result, in rank order: spawned here, or this process as one rank of torchrun's."""
    env = torchrun_env()
    if env is not None:
        return in_group(job, env.rank, env.local_rank)
    return _spawn(job)
