"""What every command shares: the consoles, JSON output and the one error path."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console

from ffn_cli.errors import RUNTIME_EXIT, FFNError, FFNRuntimeError

__all__ = ["console", "emit_json", "err_console", "fail", "handles_errors", "settings"]

console = Console()
err_console = Console(stderr=True, soft_wrap=True, highlight=False)


class _Settings:
    """Process-wide flags set by the root callback (`--debug`)."""

    debug: bool = False


settings = _Settings()

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int) -> typer.Exit:
    """Print one line on stderr and return the Exit to raise."""
    err_console.print(f"error: {message}", markup=False)
    return typer.Exit(code)


def _is_out_of_memory(exc: BaseException) -> bool:
    return type(exc).__name__ in ("OutOfMemoryError", "MemoryError") or "out of memory" in str(exc).lower()


def handles_errors(command: F) -> F:
    """Turn the tool's errors (and any other exception) into one stderr line and an exit code.

    `ffn --debug …` re-raises instead, so a bug report can carry the traceback.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except (FFNError, FFNRuntimeError) as exc:
            if settings.debug:
                raise
            raise fail(str(exc), exc.exit_code) from None
        except Exception as exc:
            if settings.debug:
                raise
            if _is_out_of_memory(exc):
                message = "out of memory while running; try smaller sizes or --device meta"
            else:
                first_line = (str(exc).strip().splitlines() or [""])[0]
                message = f"{type(exc).__name__}: {first_line} (run `ffn --debug …` for the traceback)"
            raise fail(message, RUNTIME_EXIT) from None

    return wrapper  # type: ignore[return-value]


def emit_json(data: Any) -> None:
    """Write `data` as JSON on stdout, plainly (no rich markup or wrapping)."""
    sys.stdout.write(json.dumps(data, indent=2, default=_json_default) + "\n")
    sys.stdout.flush()


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "item"):  # numpy and torch scalars
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
