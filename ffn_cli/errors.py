"""The one error type the tool raises for bad input, and its runtime sibling.

The CLI turns either into a single line on stderr: usage errors exit 2, runtime failures 1.
"""

from __future__ import annotations

from ffn_cli.i18n import _

__all__ = ["RUNTIME_EXIT", "USAGE_EXIT", "FFNError", "FFNRuntimeError"]

USAGE_EXIT = 2
RUNTIME_EXIT = 1


class FFNError(ValueError):
    """Bad input: the message names the option, the value and what is allowed (`allowed`, in
    the language of the run: the raiser translates it, as this sentence is translated here)."""

    exit_code = USAGE_EXIT

    def __init__(self, option: str, value: object, allowed: str) -> None:
        self.option = option
        self.value = value
        self.allowed = allowed
        super().__init__(_("{option}={value} is invalid: {allowed}").format(option=option, value=repr(value), allowed=allowed))


class FFNRuntimeError(RuntimeError):
    """A well-formed request that cannot run here (no CUDA, not enough memory, …)."""

    exit_code = RUNTIME_EXIT
