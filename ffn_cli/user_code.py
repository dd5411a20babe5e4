"""Running code the user wrote (a module's file, its constructor, its forward) inside ffn.

The user's code may print, exit, raise an interrupt or an exception whose message itself fails;
none of that may end ffn silently, break its `--json`, or reach the terminal raw. Inside
`running_user_code`:

- what it prints goes to stderr: stdout carries ffn's own output (a table, or JSON a program reads);
- `sys.exit()` and a `KeyboardInterrupt` it raises itself become one error naming where it
  stopped; a real Ctrl-C (SIGINT) still interrupts, as it would anywhere else;
- any exception becomes one line, its message read defensively (`exception_text`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _

__all__ = ["UserWarnings", "exception_text", "real_interrupt", "run_user_code", "running_user_code"]

MESSAGE_CHARS = 300  # an exception's first line is cut here: one line of an error, not a page


def exception_text(exc: BaseException) -> str:
    """`Kind: first line of the message`, whatever the exception does when asked for its text:
    a `__str__` that raises, prints or returns a page."""
    kind = type(exc).__name__
    try:
        with contextlib.redirect_stdout(sys.stderr):
            text = str(exc)
    except Exception as failed:  # the user's __str__: its failure is shown, not raised
        return _("{kind} (its message could not be read: {failed} raised)").format(kind=kind, failed=type(failed).__name__)
    first = (text.strip().splitlines() or [""])[0]
    if len(first) > MESSAGE_CHARS:
        first = first[:MESSAGE_CHARS] + "…"
    return f"{kind}: {first}" if first else kind


class _SigintWatch:
    """Tells a Ctrl-C from a `raise KeyboardInterrupt` in the user's code: while installed, a
    SIGINT is noted before the previous handler runs (which raises KeyboardInterrupt as usual)."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.seen = True
        if callable(self._previous):
            self._previous(signum, frame)
        raise KeyboardInterrupt

    def __enter__(self) -> _SigintWatch:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if previous not in (signal.SIG_IGN, None):
                self._previous = previous if previous is not signal.SIG_DFL else None
                signal.signal(signal.SIGINT, self._on_sigint)
                self._installed = previous
        return self

    def __exit__(self, *exc: object) -> None:
        installed = getattr(self, "_installed", None)
        if installed is not None:
            signal.signal(signal.SIGINT, installed)


_watches: list[_SigintWatch] = []


def real_interrupt() -> bool:
    """Whether the KeyboardInterrupt being handled came from a SIGINT (a real Ctrl-C)."""
    return any(w.seen for w in _watches) or not _watches


class UserWarnings:
    """The warnings the user's code (or torch on its behalf) raised, kept to be shown as ffn's
    own notes rather than printed raw by Python's default handler."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def add(self, caught: list[warnings.WarningMessage]) -> None:
        for w in caught:
            text = f"{w.category.__name__}: {(str(w.message).strip().splitlines() or [''])[0]}"
            if text not in self.messages:
                self.messages.append(text)


@contextlib.contextmanager
def running_user_code(what: str, kept: UserWarnings | None = None) -> Iterator[None]:
    """Run the user's code named `what` (`loading my_ffn.py`, `TransformerFFN(512, 2048)`):
    its prints to stderr, its exits, raised interrupts and exceptions to one FFNRuntimeError.
    ffn's own errors raised inside pass through unchanged."""
    watch = _SigintWatch()
    _watches.append(watch)
    try:
        with watch, contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            try:
                yield
            finally:
                (kept if kept is not None else UserWarnings()).add(caught)
    except (FFNError, FFNRuntimeError):
        raise
    except SystemExit as exc:
        raise FFNRuntimeError(_("{what} called sys.exit({code}); ffn stopped there").format(what=what, code=exc.code)) from None
    except KeyboardInterrupt:
        if watch.seen:
            raise
        raise FFNRuntimeError(_("{what} raised KeyboardInterrupt itself (not a Ctrl-C)").format(what=what)) from None
    except Exception as exc:  # the user's code: one line, naming it
        raise FFNRuntimeError(_("{what} raised {error}").format(what=what, error=exception_text(exc))) from None
    finally:
        _watches.remove(watch)


def run_user_code(what: str, run: Callable[[], Any]) -> Any:
    """`run()` inside `running_user_code(what)`; its value."""
    with running_user_code(what):
        return run()
