"""The one error type the tool raises for bad input, and its runtime sibling.

The CLI turns either into a single line on stderr: usage errors exit 2, runtime failures 1. Any
other exception an error quotes is said in one line too (`first_line`, `exception_line`).
"""

from __future__ import annotations

from ffn_cli.i18n import _

__all__ = [
    "RUNTIME_EXIT",
    "SHOWN_VALUE_CHARS",
    "USAGE_EXIT",
    "FFNError",
    "FFNRuntimeError",
    "elide",
    "exception_line",
    "first_line",
]

USAGE_EXIT = 2
RUNTIME_EXIT = 1

# A value an error echoes (what was typed, a key's value, an unexpected exception's text) is
# shown whole up to this length, else by its two ends: a 5,000-item list typed by mistake is not
# printed back in full, and the error stays one line; a file's path, however deep, is shown whole.
SHOWN_VALUE_CHARS = 160


def elide(text: str, limit: int = SHOWN_VALUE_CHARS) -> str:
    """`text` as it is when at most `limit` characters, else its first two thirds and last third
    of `limit` with how many characters between them were left out."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    left_out = _("…({count} characters left out)…").format(count=f"{len(text) - limit:,}")
    return text[:head] + left_out + text[-tail:]


def first_line(exc: BaseException) -> str:
    """What an exception says, in one line (see `_said`); its class name when it says nothing."""
    return _said(exc) or type(exc).__name__


def exception_line(exc: BaseException, limit: int = 2 * SHOWN_VALUE_CHARS) -> str:
    """`Kind: what it says` in one line, or the kind alone when it says nothing."""
    said = _said(exc, limit)
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def _said(exc: BaseException, limit: int = 2 * SHOWN_VALUE_CHARS) -> str:
    """The message's first line, and the next when the first is a heading ending in `:`
    (huggingface_hub's validation errors give the reason on line two), elided past `limit`
    (twice SHOWN_VALUE_CHARS: one line of an error, not a page). '' when the message is empty."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return ""
    said = f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]
    return elide(said, limit)


class FFNError(ValueError):
    """Bad input: the message names the option, the value and what is allowed (`allowed`, in
    the language of the run: the raiser translates it, as this sentence is translated here)."""

    exit_code = USAGE_EXIT

    def __init__(self, option: str, value: object, allowed: str) -> None:
        self.option = option
        self.value = value
        self.allowed = allowed
        super().__init__(_("{option}={value} is invalid: {allowed}").format(option=option, value=elide(repr(value)), allowed=allowed))


class FFNRuntimeError(RuntimeError):
    """A well-formed request that cannot run here (no CUDA, not enough memory, …)."""

    exit_code = RUNTIME_EXIT
