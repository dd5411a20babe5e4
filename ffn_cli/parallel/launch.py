"""Spawn the ranks (or join torchrun's) and collect one message from each: a result, or the
first error, a dead rank or the deadline, which stops them all.

Spawned ranks fork from a forkserver that has imported torch once, talk over gloo (CPU) or
NCCL (CUDA, one device per rank) on a free localhost port, report back through a pipe of their
own (no lock, so no named semaphore to leak) before they tear their group down, and watch the launcher's pid (`lifecycle`); they are always
stopped before the launcher returns.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterator
from multiprocessing import forkserver
from multiprocessing.connection import Connection, wait
from typing import Any, cast

import torch
import torch.multiprocessing as mp

from ffn_cli.errors import FFNError, FFNRuntimeError, exception_line
from ffn_cli.i18n import _
from ffn_cli.parallel.environment import torchrun_env
from ffn_cli.parallel.job import ParallelJob
from ffn_cli.parallel.lifecycle import Launcher, watch_launcher
from ffn_cli.parallel.rank import in_group, process_group, rank_device, rank_work

__all__ = ["run_job"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The launcher's own signals: it stops the ranks itself, so a rank never acts on them.
_LAUNCHER_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


class Outbox:
    """A rank's end of its own pipe to the launcher: one message, no lock (a lock is a named
    semaphore, which a launcher killed with SIGKILL leaves behind for the resource tracker to
    warn about, and which a rank started as the launcher unwinds can no longer open)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def put(self, message: tuple[str, int, Any]) -> None:
        with contextlib.suppress(OSError):  # the launcher is gone (its watchdog ends this rank): no one to tell
            self.connection.send(message)


class Inbox:
    """The launcher's ends of the ranks' pipes, read as one queue of messages."""

    def __init__(self, readers: list[Connection]) -> None:
        self._readers, self._messages = list(readers), list[tuple[str, int, Any]]()

    def _fill(self) -> None:
        # wait() returns the objects it was given, which typeshed widens to any waitable.
        for reader in cast("list[Connection]", wait(self._readers, timeout=0)):
            with contextlib.suppress(EOFError, OSError):  # a rank that ended without a word: its exit code tells
                self._messages.append(reader.recv())
            self._readers.remove(reader)  # one message per rank
            reader.close()

    def empty(self) -> bool:
        self._fill()
        return not self._messages

    def get(self) -> tuple[str, int, Any]:
        self._fill()
        return self._messages.pop(0)

    def close(self) -> None:
        for reader in self._readers:
            reader.close()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """The launcher's signals wait while the ranks are started: a start cut short leaves a rank
    reading half its arguments, which it reports with a traceback. They are acted on after."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _LAUNCHER_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _spawned_rank(job: ParallelJob, rank: int, port: int, queue: Any, launcher: Launcher | None = None) -> None:
    """Entry of a spawned rank: the torchrun environment by hand, then report one message."""
    # The launcher stops its ranks itself (SIGTERM, which ends a rank silently): a Ctrl-C sent to
    # the whole process group is for the launcher alone. Signals held while it started us go.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _LAUNCHER_SIGNALS)
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
    return ("crash", rank, exception_line(exc))


def _raise_from(kind: str, rank: int, payload: Any) -> None:
    if kind == "usage":
        raise FFNError(*payload)
    if kind == "runtime":
        raise FFNRuntimeError(_("rank {rank}: {payload}").format(rank=rank, payload=payload))
    raise FFNRuntimeError(_("rank {rank} failed: {payload}").format(rank=rank, payload=payload))


# How long a crash report waits for the rank whose death may have caused it to be seen dead.
_BLAME_GRACE_S = 1.0


def _dead(procs: list[Any], results: dict[int, Any]) -> list[tuple[int, int]]:
    """(rank, exit code) of the ranks that died without reporting, those killed by a signal first."""
    dead = [(i, p.exitcode) for i, p in enumerate(procs) if i not in results and p.exitcode not in (None, 0)]
    return sorted(dead, key=lambda d: (d[1] >= 0, d[0]))


def _died(rank: int, code: int) -> FFNRuntimeError:
    if code < 0:
        return FFNRuntimeError(
            _("rank {rank} was killed by {signal_name} before reporting").format(rank=rank, signal_name=_signal_name(-code))
        )
    return FFNRuntimeError(_("rank {rank} exited with code {code} before reporting").format(rank=rank, code=code))


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
            raise FFNRuntimeError(
                _("the {world_size} ranks did not finish within {timeout_s:g} s").format(world_size=job.world_size, timeout_s=job.timeout_s)
            )
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
    forkserver.ensure_running()  # started before the signals are held, so that it does not inherit that
    pipes = [ctx.Pipe(duplex=False) for _ in range(job.world_size)]  # (reader, writer) per rank
    port, launcher = _free_port(), Launcher.current()
    procs = [ctx.Process(target=_spawned_rank, args=(job, r, port, Outbox(w), launcher), daemon=True) for r, (_, w) in enumerate(pipes)]
    inbox = Inbox([reader for reader, _ in pipes])
    try:
        with _signals_held():
            for p in procs:
                p.start()
            for _, writer in pipes:
                writer.close()  # each rank holds its own
        return _collect(job, procs, inbox)
    finally:
        _stop(procs)
        inbox.close()


def run_job(job: ParallelJob) -> list[Any]:
    """Every rank's result, in rank order: spawned here, or this process as one rank of torchrun's."""
    env = torchrun_env()
    if env is not None:
        return in_group(job, env.rank, env.local_rank)
    return _spawn(job)
