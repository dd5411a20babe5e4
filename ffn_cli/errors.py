"""The one error type the tool raises for bad input, and its runtime sibling.

The CLI turns either into a single line on stderr: usage errors exit 2, runtime failures 1.
"""

from __future__ import annotations

__all__ = ["RUNTIME_EXIT", "USAGE_EXIT", "FFNError", "FFNRuntimeError"]

USAGE_EXIT = 2
RUNTIME_EXIT = 1


class FFNError(ValueError):
    """Bad input: the message names the option, the value and what is allowed."""

    exit_code = USAGE_EXIT

    def __init__(self, option: str, value: object, allowed: str) -> None:
        self.option = option
        self.value = value
        self.allowed = allowed
        super().__init__(f"{option}={value!r} is invalid: {allowed}")


class FFNRuntimeError(RuntimeError):
    """A well-formed request that cannot run here (no CUDA, not enough memory, …)."""

    exit_code = RUNTIME_EXIT
