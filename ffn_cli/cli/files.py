"""Which options of each command name a file it writes, and which name a file it reads: declared
once here, and checked together before any work (`check_command_files`, called by every command
through cli/export.py). Each output's destination is checked as ffn_cli/outputs.py checks one;
then two outputs naming one file, or an output naming an input, are refused with one line
naming both options."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ffn_cli.outputs import HTML_FILES, PLOT_FILES, SVG_FILES, check_distinct, check_output_file

__all__ = ["COMMAND_FILES", "INPUT_FILES", "OUTPUT_FILES", "CommandFiles", "check_command_files"]


@dataclass(frozen=True)
class CommandFiles:
    """A command's options that name files: those it writes, and those it reads."""

    outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()


EXPORTS = ("svg", "html")  # every command's (cli/export.py)
COMMAND_FILES: dict[str, CommandFiles] = {
    "trace": CommandFiles(outputs=("page", *EXPORTS), inputs=("config", "module")),
    "params": CommandFiles(outputs=("plot", *EXPORTS), inputs=("config", "gpu")),
    "bench": CommandFiles(outputs=("plot", *EXPORTS), inputs=("config", "gpu")),
    "variants": CommandFiles(outputs=EXPORTS),
    # --gpu this reads the profile --measure writes, but --measure refuses --gpu (its own rule says so).
    "hardware": CommandFiles(outputs=("measure", *EXPORTS)),
}


def _html(option: str, value: str) -> Path:
    return check_output_file(option, value, HTML_FILES)


def _svg(option: str, value: str) -> Path:
    return check_output_file(option, value, SVG_FILES)


def _plot(option: str, value: str) -> Path:
    return check_output_file(option, value, PLOT_FILES)


def _profile(option: str, value: bool) -> Path | None:
    """--measure writes the profile `--gpu this` reads: its place is checked before the measurement."""
    from ffn_cli.hardware.profile import check_profile_target

    return check_profile_target() if value else None


# option → its checked destination (None: the option asks for no file this run)
OUTPUT_FILES: dict[str, Callable[[str, Any], Path | None]] = {
    "page": _html,
    "svg": _svg,
    "html": _html,
    "plot": _plot,
    "measure": _profile,
}


def _config_files(text: str | None) -> list[Path]:
    """Every file --config may read: the value as typed and each item of its comma list, a
    folder's config.json for a folder (more than it reads is harmless: it only refuses outputs)."""
    if text is None:
        return []
    files = []
    for item in {text, *text.split(",")}:
        path = Path(item.strip()).expanduser()
        files += [path, path / "config.json"] if os.path.isdir(path) else [path]  # isdir: False for any name no file has
    return files


def _module_files(text: str | None) -> list[Path]:
    """The file of `FILE.py:NAME(args)`: the text before the colon that precedes NAME."""
    if text is None:
        return []
    head = text.partition("(")[0]
    target = head.rpartition(":")[0].strip()
    return [Path(target).expanduser()] if target else []


def _profile_files(value: str | None) -> list[Path]:
    """The measured profile, which --gpu this reads."""
    from ffn_cli.hardware.profile import PROFILE_NAME, profile_path

    return [profile_path()] if value is not None and value.strip().lower() == PROFILE_NAME else []


# option → the files it makes the command read
INPUT_FILES: dict[str, Callable[[Any], list[Path]]] = {
    "config": _config_files,
    "module": _module_files,
    "gpu": _profile_files,
}


def check_command_files(command: str, values: Mapping[str, Any]) -> dict[str, Path]:
    """The checked destinations of `command`'s outputs given in `values` (option → value), or
    FFNError: one that cannot be written, two naming one file, one naming an input."""
    files = COMMAND_FILES[command]
    given = {option: values[option] for option in files.outputs if values.get(option) not in (None, False)}
    if not given:
        return {}
    outputs = {}
    for option, value in given.items():
        target = OUTPUT_FILES[option](option, value)
        if target is not None:
            outputs[option] = target
    inputs = {option: INPUT_FILES[option](values.get(option)) for option in files.inputs}
    check_distinct(outputs, inputs)
    return outputs
