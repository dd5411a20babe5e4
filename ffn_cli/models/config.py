"""Reading a Hugging Face config.json, or a preset shipped as package data. JSON only: a
config is data, never code, so nothing here imports or executes what it reads."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ffn_cli.errors import FFNError, FFNRuntimeError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = ["load_config", "load_preset", "parse_config", "preset_names"]

# A config.json is a few kilobytes; anything this large is a weights file given by mistake.
MAX_CONFIG_BYTES = 4 << 20


def _preset_dir() -> Traversable:
    return resources.files("ffn_cli").joinpath("presets")


def preset_names() -> list[str]:
    """Every shipped preset, sorted: the file names under ffn_cli/presets without .json."""
    return sorted(p.name[: -len(".json")] for p in _preset_dir().iterdir() if p.name.endswith(".json"))


def load_preset(name: str) -> dict[str, Any]:
    key = name.strip().lower()
    names = preset_names()
    if key not in names:
        raise FFNError("preset", name, "choose one of " + ", ".join(names))
    return parse_config(_preset_dir().joinpath(key + ".json").read_text(encoding="utf-8"), f"preset {key}")


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a config.json (or the config.json inside a model directory) as a JSON object."""
    given = str(path)
    file = Path(path).expanduser()
    if file.is_dir():
        if not (file / "config.json").is_file():
            raise FFNError("config", given, "is a directory without a config.json")
        file = file / "config.json"
    if not file.exists():
        raise FFNError("config", given, "no such file")
    if not file.is_file():
        raise FFNError("config", given, "is not a regular file")
    try:
        if file.stat().st_size > MAX_CONFIG_BYTES:
            raise FFNError("config", given, f"is {file.stat().st_size:,} bytes; a config.json is a small JSON file")
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise FFNError("config", given, "is not UTF-8 text; a config.json is JSON") from None
    except OSError as exc:
        raise FFNRuntimeError(f"cannot read config {given}: {exc.strerror or exc}") from None
    return parse_config(text, given)


def parse_config(text: str, source: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FFNError("config", source, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise FFNError("config", source, "is nested too deeply to be a config.json") from None
    if not isinstance(data, dict):
        raise FFNError("config", source, f"must be a JSON object (a Hugging Face config.json), not a {type(data).__name__}")
    return data
