"""SIGTERM, SIGHUP and SIGKILL of a run with spawned ranks leave no process of ours behind.

Each test starts the real `ffn` in a subprocess, tagged through an environment variable that
every process it starts inherits (the forkserver, the resource tracker, the ranks), waits until
the ranks are up, signals the main process and then reads the process table (/proc) for the tag.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import as_from_a_terminal

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads the process table from /proc")

ROOT = Path(__file__).resolve().parent.parent
TAG = "FFN_TEST_PROCESS_TAG"
# Ranks, the forkserver and the resource tracker: the main process's tagged descendants.
UP = 4
# How long a process may take to start or to end before the test fails: hang guards only. Each
# wait polls and returns as soon as its event happens, so a generous bound costs a quick machine
# nothing, and a loaded one (torch imports and rank teardown slowed several times) still passes.
WAIT_S = 300


def _tagged(tag: str) -> list[int]:
    """Pids of the live (not zombie) processes whose environment carries `tag`."""
    needle = f"{TAG}={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if needle in environ.split(b"\0") and stat[stat.rfind(")") + 2] not in "ZX":
            found.append(int(entry))
    return found


def _start(args: list[str], stderr: Path) -> tuple[subprocess.Popen[bytes], str]:
    # stderr to a file, not a pipe: a surviving rank would hold a pipe open after ffn exits.
    tag = uuid.uuid4().hex
    env = {**os.environ, TAG: tag, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ffn_cli", *args], env=env, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=as_from_a_terminal
        )
    return proc, tag


def _wait_for_ranks(proc: subprocess.Popen[bytes], tag: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while len([p for p in _tagged(tag) if p != proc.pid]) < UP:
        assert proc.poll() is None, f"ffn exited ({proc.returncode}) before its ranks were up"
        assert time.monotonic() < deadline, "the ranks did not start"
        time.sleep(0.1)


def _survivors(tag: str, within_s: float) -> list[int]:
    deadline = time.monotonic() + within_s
    while (left := _tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _signal_run(args: list[str], sig: int, tmp_path: Path) -> tuple[int, str, list[int]]:
    proc, tag = _start(args, tmp_path / "stderr")
    try:
        _wait_for_ranks(proc, tag)
        proc.send_signal(sig)
        proc.wait(timeout=WAIT_S)
        return proc.returncode, (tmp_path / "stderr").read_text(), _survivors(tag, within_s=WAIT_S)
    finally:
        for pid in _tagged(tag):  # only what this test started: its tag is in their environment
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


TRACE_TP = ["trace", "--tp", "2", "--d-model", "1024", "--batch", "8", "--seq-len", "512"]
TRACE_EP = ["trace", "--variant", "moe", "--ep", "2", "--d-model", "512", "--batch", "8", "--seq-len", "512"]
BENCH_TP = ["bench", "--tp", "2", "--d-model", "64", "--seq-len", "8", "--batch", "1", "--repeats", "100000"]


@pytest.mark.parametrize(
    ("args", "sig"),
    [
        # The handler is one, for every command: the quick run takes each signal once, with trace and bench.
        pytest.param(TRACE_TP, signal.SIGTERM, marks=pytest.mark.slow),
        (TRACE_EP, signal.SIGHUP),
        (BENCH_TP, signal.SIGTERM),
        pytest.param(BENCH_TP, signal.SIGINT, marks=pytest.mark.slow),  # SIGINT: as the ranks start, below
    ],
    ids=["trace-tp-term", "trace-ep-hup", "bench-tp-term", "bench-tp-int"],
)
def test_signal_stops_every_rank(args: list[str], sig: int, tmp_path: Path) -> None:
    code, stderr, left = _signal_run(args, sig, tmp_path)
    assert code == 128 + sig, stderr
    assert not left, f"still running after {signal.Signals(sig).name}: {left}"
    assert "Traceback" not in stderr and "leaked" not in stderr, stderr


def test_ranks_end_when_the_launcher_is_killed(tmp_path: Path) -> None:
    """SIGKILL runs no handler: the ranks' watchdog on the launcher ends them."""
    code, _stderr, left = _signal_run(BENCH_TP, signal.SIGKILL, tmp_path)
    assert code == -signal.SIGKILL
    assert not left, f"still running after SIGKILL: {left}"


@pytest.mark.parametrize(
    ("sig", "up"),
    [(signal.SIGTERM, 1), (signal.SIGINT, 3), (signal.SIGKILL, 3)],
    ids=["term-as-the-server-starts", "int-as-the-ranks-start", "kill-as-the-ranks-start"],
)
def test_a_signal_while_the_ranks_start_is_quiet(sig: int, up: int, tmp_path: Path) -> None:
    """A rank started as its launcher unwinds printed a 14-line FileNotFoundError from
    multiprocessing's semaphores; after SIGKILL the resource tracker warned of leaked ones."""
    proc, tag = _start(["trace", "--tp", "2", "--d-model", "64"], tmp_path / "stderr")
    try:
        deadline = time.monotonic() + WAIT_S
        while len([p for p in _tagged(tag) if p != proc.pid]) < up:  # the forkserver, then the ranks
            assert proc.poll() is None and time.monotonic() < deadline, "ffn ended before its ranks started"
            time.sleep(0.01)
        proc.send_signal(sig)
        proc.wait(timeout=WAIT_S)
        left = _survivors(tag, within_s=WAIT_S)  # the forkserver may still be importing torch
        stderr = (tmp_path / "stderr").read_text()
        assert proc.returncode == (-sig if sig == signal.SIGKILL else 128 + sig), stderr
        assert "Traceback" not in stderr and "leaked" not in stderr and "Error" not in stderr, stderr
        assert not left, f"still running: {left}"
    finally:
        for pid in _tagged(tag):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
