"""Spawned ranks live no longer than the process that launched them.

Ranks are forked by multiprocessing's forkserver, so their parent is the server, not the
launcher; and the server itself outlives the launcher while any rank holds its pipe open. A
watchdog thread in each rank therefore watches the launcher's pid (with its start time, so a
reused pid does not count) and ends the rank the moment the launcher is gone, however it went:
a signal it handled, SIGKILL, or a crash. The launcher's own signals are handled in
`ffn_cli.cli.signals`, which unwinds it so that its ranks are stopped in order first.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

__all__ = ["Launcher", "watch_launcher"]

# How often a rank looks for its launcher: the longest an orphaned rank runs on.
POLL_S = 0.2
# The exit status of a rank ended by its watchdog: 128 + SIGKILL, as if it had been killed.
ORPHAN_EXIT = 137


@dataclass(frozen=True)
class Launcher:
    """The launching process, named so that a later process reusing its pid is not mistaken for it."""

    pid: int
    start_ticks: int | None

    @classmethod
    def current(cls) -> Launcher:
        pid = os.getpid()
        return cls(pid, _start_ticks(pid))

    def alive(self) -> bool:
        state = _stat_fields(self.pid)
        if state is None:  # no /proc (not Linux): ask the kernel whether the pid exists
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return True
        if not state:
            return False
        # A zombie has exited; a different start time is another process with the same pid.
        return state[0] not in ("Z", "X") and (self.start_ticks is None or int(state[19]) == self.start_ticks)


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name (state first); [] when the pid is gone, None without /proc."""
    if not os.path.isdir("/proc/self"):
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return []
    return text[text.rfind(")") + 2 :].split()  # the name may hold spaces and parentheses


def _start_ticks(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def watch_launcher(launcher: Launcher) -> threading.Thread:
    """End this process (at once, skipping cleanup a dead peer would hang) once `launcher` is gone."""

    def watch() -> None:
        stop = threading.Event()
        while launcher.alive():
            stop.wait(POLL_S)
        os._exit(ORPHAN_EXIT)

    thread = threading.Thread(target=watch, name="ffn-launcher-watchdog", daemon=True)
    thread.start()
    return thread
