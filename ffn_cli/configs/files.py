"""Reading a Hugging Face config.json, or a preset shipped as package data. JSON only: a
config is data, never code, so nothing here imports or executes what it reads."""

from __future__ import annotations

import json
import math
import os
import select
import sys
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ffn_cli.configs.quant_sidecar import MAX_SIDECAR_BYTES, read_beside
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.names import unknown_name

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = ["load_config", "load_preset", "parse_config", "preset_names"]

# A config.json is a few kilobytes; anything this large is a weights file given by mistake.
MAX_CONFIG_BYTES = 4 << 20
# A local config.json reads in milliseconds; a file that keeps us waiting is no config.
READ_TIMEOUT_S = 5.0


def _preset_dir() -> Traversable:
    return resources.files("ffn_cli").joinpath("presets")


def preset_names() -> list[str]:
    """Every shipped preset, sorted: the file names under ffn_cli/presets without .json."""
    return sorted(p.name[: -len(".json")] for p in _preset_dir().iterdir() if p.name.endswith(".json"))


def load_preset(name: str) -> dict[str, Any]:
    key = name.strip().lower()
    names = preset_names()
    if key not in names:
        raise unknown_name("preset", name, names, what=N_("preset"), listed_by="ffn params --list-presets")
    return parse_config(_preset_dir().joinpath(key + ".json").read_text(encoding="utf-8"), f"preset {key}")


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a config.json (or the config.json inside a model directory) as a JSON object, with
    ModelOpt's hf_quant_config.json beside it where it says no quantization of its own."""
    given = str(path)
    try:
        file = _config_file(Path(path).expanduser(), given)
    except OSError as exc:  # a folder we may not list
        raise FFNError("config", given, _("cannot be read: {reason}").format(reason=exc.strerror or exc)) from None
    config = parse_config(_read_text(file, given), given)
    return read_beside(config, file, lambda beside: parse_config(_read_text(beside, str(beside), MAX_SIDECAR_BYTES), str(beside)))


def _read_text(file: Path, given: str, cap: int = MAX_CONFIG_BYTES) -> str:
    """A small local JSON file's text, read within READ_TIMEOUT_S and `cap` bytes."""
    try:
        data = read_capped(file, cap, READ_TIMEOUT_S)
    except OSError as exc:  # a folder we may not list, a file we may not read
        raise FFNError("config", given, _("cannot be read: {reason}").format(reason=exc.strerror or exc)) from None
    except TimeoutError:
        raise FFNError(
            "config",
            given,
            _("gave no end of file within {read_timeout_s:g} s; a config.json is a small file").format(read_timeout_s=READ_TIMEOUT_S),
        ) from None
    if data is None:
        raise FFNError(
            "config",
            given,
            _("is over {max_config_bytes:,} bytes; a config.json is a small JSON file").format(max_config_bytes=cap),
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FFNError("config", given, _("is not UTF-8 text; a config.json is JSON")) from None


def _config_file(file: Path, given: str) -> Path:
    if file.is_dir():
        if not (file / "config.json").is_file():
            raise FFNError("config", given, _("is a directory without a config.json"))
        file = file / "config.json"
    if not file.exists():
        raise FFNError("config", given, _("no such file"))
    if not file.is_file():
        raise FFNError("config", given, _("is not a regular file"))
    return file


def read_capped(file: Path, cap: int, timeout_s: float) -> bytes | None:
    """The bytes of `file`, or None past `cap` bytes; TimeoutError if it is still going after
    `timeout_s`. st_size is not trusted (files in /proc report 0), and a read that would block
    (/proc/kmsg waits for the kernel's next message) is waited on only until the deadline."""
    deadline = time.monotonic() + timeout_s
    fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        chunks: list[bytes] = []
        size = 0
        while size <= cap:
            try:
                chunk = os.read(fd, min(1 << 16, cap + 1 - size))
            except BlockingIOError:
                if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                    raise TimeoutError from None
                continue
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if time.monotonic() > deadline:
                raise TimeoutError
        return None
    finally:
        os.close(fd)


# transformers writes a float JSON has no number for as an object: {"__float__": "Infinity"}
# (Falcon-H1's time_step_limit), and reads it back as the float.
_TAGGED_FLOATS = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def _tagged_float(obj: dict[str, Any]) -> Any:
    tag = obj.get("__float__") if len(obj) == 1 else None
    return _TAGGED_FLOATS[tag] if isinstance(tag, str) and tag in _TAGGED_FLOATS else obj


def parse_config(text: str, source: str) -> dict[str, Any]:
    try:
        data = json.loads(text, object_hook=_tagged_float)
    except json.JSONDecodeError as exc:
        raise FFNError(
            "config",
            source,
            _("is not valid JSON (line {lineno}, column {colno}: {msg})").format(lineno=exc.lineno, colno=exc.colno, msg=exc.msg),
        ) from None
    except ValueError:  # an integer past Python's 4,300-digit limit for int()
        raise FFNError("config", source, _("holds a number too long to be a size")) from None
    except RecursionError:
        raise FFNError("config", source, _("is nested too deeply to be a config.json")) from None
    if not isinstance(data, dict):
        raise FFNError(
            "config", source, _("must be a JSON object (a Hugging Face config.json), not a {name}").format(name=type(data).__name__)
        )
    return data
