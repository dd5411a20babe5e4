"""SIGTERM and SIGHUP end the tool the way Ctrl-C does: by unwinding.

The default action kills this process on the spot, so nothing in a `finally` runs: spawned ranks
keep running under init, and a half-written temp file stays. Here the first such signal raises
`Terminated` in the main thread instead; every `finally` on the way out runs (ranks are stopped,
temp files removed) and the command exits with 128 + the signal number, as a shell reports a
killed process (143 for SIGTERM, 129 for SIGHUP).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

__all__ = ["HANDLED_SIGNALS", "Terminated", "handle_termination"]

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """Raised by a termination signal; a BaseException, as KeyboardInterrupt, so that no
    `except Exception` swallows it on the way out."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
    # A second signal while unwinding takes the default action: the ranks' own watchdogs still
    # end them (ffn_cli.parallel.lifecycle), so an impatient user is never stuck.
    for sig in HANDLED_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    raise Terminated(signum)


def handle_termination() -> None:
    """Install the handlers (main thread only: elsewhere, as under some test runners, a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in HANDLED_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:  # `nohup ffn …` asked to ignore SIGHUP: keep it so
            signal.signal(sig, _raise_terminated)
