"""What every command shares: the consoles, JSON output and the one error path."""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TextIO, TypeVar

import typer
from rich.console import Console

from ffn_cli.errors import RUNTIME_EXIT, FFNError, FFNRuntimeError, elide, exception_line
from ffn_cli.i18n import _
from ffn_cli.render.json_data import finite_floats, json_default
from ffn_cli.render.literal import visible
from ffn_cli.services.environment import require_cache_dirs, require_temp_dir
from ffn_cli.spec import spec_options

__all__ = [
    "FIELD_OPTIONS",
    "console",
    "describe",
    "described",
    "emit_json",
    "err_console",
    "fail",
    "fit_consoles",
    "handles_errors",
    "require_cache_dirs",
    "require_temp_dir",
    "running",
    "settings",
    "terminal_size",
]


def _usable(name: str) -> int | None:
    text = os.environ.get(name, "")
    return int(text) if text.isascii() and text.isdigit() and 0 < int(text) < 1_000_000 else None


def terminal_size(stream: TextIO | None = None) -> tuple[int, int]:
    """(columns, lines) to draw at, as rich measures them: COLUMNS and LINES, else the terminal
    of `stream` (stdout), else 80 × 25. A value rich would misread (COLUMNS=0 would make every
    table zero columns wide, printing nothing; '²' is a digit to `isdigit` but no integer) is
    passed over: each console is given its size, so none reads the environment itself."""
    try:
        measured = os.get_terminal_size((stream or sys.stdout).fileno())
        columns, lines = measured.columns or 80, measured.lines or 25
    except (AttributeError, ValueError, OSError):  # not a terminal, or no file behind it
        columns, lines = 80, 25
    return _usable("COLUMNS") or columns, _usable("LINES") or lines


# emoji=False: text the user typed (cuda:x, a path) must print as typed, not as ❌.
# Sized as made, and again as each command starts (`fit_consoles`).
_width, _height = terminal_size(sys.stdout)
console = Console(emoji=False, width=_width, height=_height)
_width, _height = terminal_size(sys.stderr)
err_console = Console(stderr=True, soft_wrap=True, highlight=False, emoji=False, width=_width, height=_height)


def fit_consoles() -> None:
    """Measure the terminal as a command starts: one process (a notebook, a test run) runs
    many commands, each under its own COLUMNS."""
    console.size = terminal_size(sys.stdout)
    err_console.size = terminal_size(sys.stderr)


class _Settings:
    """Process-wide flags read from the command line as it starts (`--debug`, `--json`)."""

    debug: bool = False
    json: bool = False  # a failure is also one JSON object on stdout, for the program reading it


settings = _Settings()

P = ParamSpec("P")
R = TypeVar("R")


ERROR_PREFIX = "error: "  # in every language: what a script matches (`^error:`) stays the same


def fail(message: str, code: int, option: str | None = None) -> typer.Exit:
    """Print one line on stderr, `error: ` and the message, and return the Exit to raise. Under
    --json the same error is also a JSON object on stdout (README, Common errors): the message as on
    stderr, the option it is about as typed (None when it is about no option), the exit code."""
    text = visible(message)
    err_console.print(ERROR_PREFIX + text, markup=False)
    if settings.json:
        with contextlib.suppress(OSError):  # stdout itself failed (a full disk, a closed pipe): stderr said so
            emit_json({"error": {"message": text, "option": option, "exit_code": code}})
    return typer.Exit(code)


def _is_out_of_memory(exc: BaseException) -> bool:
    return type(exc).__name__ in ("OutOfMemoryError", "MemoryError") or "out of memory" in str(exc).lower()


# Writing stdout can fail on its own: a full disk (`> /dev/full`), a quota, a closed pipe.
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EPIPE, errno.EIO, errno.EFBIG}


def _is_output_error(exc: OSError) -> bool:
    return exc.errno in _OUTPUT_ERRNOS and exc.filename is None


def handles_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn the tool's errors (and any other exception) into one stderr line and an exit code.

    `ffn --debug …` re-raises instead, so a bug report can carry the traceback.
    """

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except FFNError as exc:
            if settings.debug:
                raise
            message, option = described(exc)
            raise fail(message, exc.exit_code, option) from None
        except FFNRuntimeError as exc:
            if settings.debug:
                raise
            raise fail(str(exc), exc.exit_code) from None
        except Exception as exc:  # the last boundary: anything else, ffn's own bugs too, said as its kind, not as bad input
            if settings.debug:
                raise
            if isinstance(exc, OSError) and _is_output_error(exc):
                message = _("cannot write to standard output: {reason}").format(reason=exc.strerror or exc)
            elif _is_out_of_memory(exc):
                message = _("out of memory while running; try smaller sizes or --device meta")
            else:
                message = _("{error} (run `ffn --debug …` for the traceback)").format(error=exception_line(exc))
            raise fail(message, RUNTIME_EXIT) from None

    return wrapper


# Fields whose option has another name; every other field `a_b` is the option `--a-b`, but an
# FFNSpec field's, which its Option names (spec.py: fused_gate_up is --fused).
FIELD_OPTIONS = {"min_time_ms": "min_time"}


def _option_of(field: str) -> str:
    """The parameter a field is given by: its FFN option, a renamed one, or its own name."""
    ffn = spec_options().get(field)
    return ffn.name if ffn is not None else FIELD_OPTIONS.get(field, field)


_running: list[Any] = []  # the contexts of the commands running now, innermost last


@contextlib.contextmanager
def running(ctx: Any) -> Iterator[None]:
    """`ctx` is the running command's context while the block runs (cli/commands.py)."""
    _running.append(ctx)
    try:
        yield
    finally:
        _running.pop()


def current_context() -> Any:
    """The click context of the command running now (which options were typed, where each value
    came from), or None outside one (the Python API)."""
    return _running[-1] if _running else None


def _source_name(ctx: Any, name: str) -> str:
    """COMMANDLINE, DEFAULT, ENVIRONMENT…: where click took the parameter's value from."""
    source = ctx.get_parameter_source(name)
    return getattr(source, "name", "")


def describe(exc: FFNError) -> str:
    """The error as the user typed it: `--d-model 0: must be …`, not the spec's field name;
    a key read from a config file or preset is named as that file's key. An error that
    words its whole message itself (no `allowed` part) is printed as it is."""
    return described(exc)[0]


def described(exc: FFNError) -> tuple[str, str | None]:
    """`describe`'s words, and the option they are about as typed (`--d-model`; `--config` for
    a key of its file), or None."""
    if not exc.allowed:
        return str(exc), None
    ctx = current_context()
    params = {p.name: p for p in ctx.command.params} if ctx is not None else {}
    param = params.get(_option_of(exc.option))
    source = _model_source(ctx)
    if exc.option == "config" and source and source[1] != "--config" and not ctx.params.get("config"):
        # The model's config.json itself, named by --preset or --model: named as that option.
        return f"{source[1]} {elide(str(ctx.params[source[1][2:]]))}: {exc.allowed}", source[1]
    if param is not None and source and _source_name(ctx, param.name) != "COMMANDLINE":
        param = None  # a value the model's config set, not one the user typed
    if param is not None and param.opts:
        flag = max(param.opts, key=len)
        if isinstance(exc.value, bool) and getattr(param, "is_flag", False):
            # --no-attn-bias is typed as such, not as `--attn-bias False`.
            typed = flag if exc.value or not param.secondary_opts else max(param.secondary_opts, key=len)
            return f"{typed}: {exc.allowed}", typed
        if exc.value is None:  # nothing was given: `--d-model: could not be read…`, not `--d-model None`
            return f"{flag}: {exc.allowed}", flag
        value = elide(exc.value if isinstance(exc.value, str) and exc.value.strip() else repr(exc.value))
        return f"{flag} {value}: {exc.allowed}", flag
    if source:
        text = _("{source}: key {key} = {value}: {allowed}").format(
            source=elide(source[0]), key=exc.option, value=elide(repr(exc.value)), allowed=exc.allowed
        )
        return text, source[1]
    return str(exc), None


def _model_source(ctx: Any) -> tuple[str, str] | None:
    """The model a key came from, as the user named it (`preset gpt2`, the config path, `model
    org/x`), and the option that named it."""
    if ctx is None:
        return None
    preset, config, model = (ctx.params.get(name) for name in ("preset", "config", "model"))
    if preset:
        return _("preset {name}").format(name=preset), "--preset"
    if config:
        return str(config), "--config"
    return (_("model {name}").format(name=model), "--model") if model else None


def emit_json(data: Any) -> None:
    """Write `data` as JSON on stdout, plainly (no rich markup or wrapping). NaN and ±Inf,
    which JSON cannot hold (Python would write bare NaN / Infinity), become null."""
    sys.stdout.write(json.dumps(finite_floats(data), indent=2, default=json_default, allow_nan=False) + "\n")
    sys.stdout.flush()
