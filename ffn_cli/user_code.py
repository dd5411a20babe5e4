"""Running code the user wrote (a module's file, its constructor, its forward) inside ffn.

The user's code may print, exit, raise an interrupt or an exception whose message itself fails;
none of that may end ffn silently, break its `--json`, or reach the terminal raw. Inside
`running_user_code`:

- what it prints goes to stderr: stdout carries ffn's own output (a table, or JSON a program reads);
- `sys.exit()` and a `KeyboardInterrupt` it raises itself become one error naming where it
  stopped; a real Ctrl-C (SIGINT) still interrupts, as it would anywhere else;
- any exception becomes one line, its message read defensively (`exception_text`), said as the
  user's code's when it was, and as ffn's own when its innermost frame (torch's and the standard
  library's skipped) is ffn's code (`ffns_fault`): ffn's failure is never blamed on the user.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from ffn_cli.errors import SHOWN_VALUE_CHARS, FFNError, FFNRuntimeError, exception_line
from ffn_cli.i18n import _

__all__ = [
    "UserWarnings",
    "exception_text",
    "ffn_failed",
    "ffns_fault",
    "real_interrupt",
    "run_user_code",
    "running_user_code",
    "users_call",
    "users_op",
]


def exception_text(exc: BaseException, limit: int = 2 * SHOWN_VALUE_CHARS) -> str:
    """`Kind: first line of the message` (`exception_line`), whatever the exception does when
    asked for its text: a `__str__` that raises, prints or returns a page."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return exception_line(exc, limit)
    except Exception as failed:  # the user's __str__: its failure is shown, not raised
        return _("{kind} (its message could not be read: {failed} raised)").format(kind=type(exc).__name__, failed=type(failed).__name__)


def users_op(func: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    """Run a torch call the user's code made, from inside one of ffn's modes: its failure is
    the call's (the user's arguments), not ffn's, though ffn's frame is the innermost."""
    return func(*args, **kwargs)


def users_call(func: Callable[..., Any], *args: Any) -> Any:
    """Call the user's module (its forward, its backward): below this frame, what is neither
    ffn's nor torch's is theirs, a module torch defines (nn.Linear) included."""
    return func(*args)


def ffns_fault(exc: BaseException) -> bool:
    """Whether ffn's own code raised `exc`: the innermost frame that is neither torch's nor the
    standard library's is ffn's (reaching `users_call` first, it is the user's). A call that
    failed inside `users_op` is its maker's: the first frame outside ffn's modes, ffn's own
    code calling torch, or anything else (a torch module's forward, the user's)."""
    if isinstance(exc, SyntaxError) and not str(exc.filename or "").startswith(_FFN_FOLDER):
        return False  # the user's file did not compile: no frame of theirs ran to be found
    frames = [frame for frame, _line in traceback.walk_tb(exc.__traceback__)]
    through_an_op = False  # past users_op: the next frame outside ffn's modes made the call
    for frame in reversed(frames):
        if frame.f_code is users_op.__code__:
            through_an_op = True
            continue
        if frame.f_code is users_call.__code__:
            return False
        top = str(frame.f_globals.get("__name__", "")).split(".")[0]
        if through_an_op:
            if top == "ffn_cli" and frame.f_code.co_name in _MODE_HANDLERS:
                continue
            return top == "ffn_cli"
        if top == "torch" or top in sys.stdlib_module_names:
            continue
        return top == "ffn_cli"
    return False


WARNING_CHARS = 8 * SHOWN_VALUE_CHARS  # a warning of the user's code, kept as a note: a library's run long
_FFN_FOLDER = os.path.dirname(os.path.abspath(__file__)) + os.sep
# ffn's modes (and torch_names.DispatchMode's `dispatch`), which run each call on the maker's behalf
_MODE_HANDLERS = ("__torch_function__", "__torch_dispatch__", "dispatch")


def ffn_failed(what: str, exc: BaseException) -> FFNRuntimeError:
    """The one line for ffn's own failure while it ran the user's code: ffn's, not theirs."""
    return FFNRuntimeError(
        _("ffn itself failed while running {what}, not your code: {error} (run `ffn --debug …` for the traceback)").format(
            what=what, error=exception_text(exc)
        )
    )


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
            # A warning is a note the trace keeps, read at leisure: shown whole up to a page's worth.
            message = w.message if isinstance(w.message, Warning) else w.category(w.message)
            text = exception_text(message, WARNING_CHARS)
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
    except Exception as exc:  # the user's code: one line, naming it (or ffn, when the fault is ffn's)
        if ffns_fault(exc):
            raise ffn_failed(what, exc) from exc
        raise FFNRuntimeError(_("{what} raised {error}").format(what=what, error=exception_text(exc))) from None
    finally:
        _watches.remove(watch)


def run_user_code(what: str, run: Callable[[], Any]) -> Any:
    """`run()` inside `running_user_code(what)`; its value."""
    with running_user_code(what):
        return run()
