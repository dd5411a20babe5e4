"""NVIDIA ModelOpt's hf_quant_config.json: the quantization of a checkpoint whose config.json
carries none (nvidia/DeepSeek-V3.2-NVFP4's, Nemotron 3's NVFP4 and FP8 ones), read as vLLM reads
it. Its `quantization` object becomes the config's `quantization_config` (quant_method modelopt),
and the config says where it came from. JSON only, as a config.json is read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _

__all__ = ["FROM_SIDECAR", "MAX_SIDECAR_BYTES", "SIDECAR", "has_quantization", "merged", "present", "read_beside"]

SIDECAR = "hf_quant_config.json"
# The key a config read with its sidecar carries: the file its quantization_config came from.
FROM_SIDECAR = "_quantization_from"
# A MIXED_PRECISION sidecar lists every quantized module (MiniMax-M3's: 3 MB); more is no sidecar.
MAX_SIDECAR_BYTES = 64 << 20


def has_quantization(config: Mapping[str, Any]) -> bool:
    """Whether config.json says its own quantization (at its top or in its text_config)."""
    text = config.get("text_config")
    return config.get("quantization_config") is not None or (isinstance(text, Mapping) and text.get("quantization_config") is not None)


def present(file: Path) -> bool:
    """Whether something is at `file`, a broken link included (refused as no regular file, never passed over)."""
    return file.exists() or file.is_symlink()


def merged(config: dict[str, Any], sidecar: Mapping[str, Any], source: str) -> dict[str, Any]:
    """`config` with the parsed sidecar's `quantization` as its quantization_config (ModelOpt's,
    whatever else it names); one that holds no such object is refused by its name."""
    quantization = sidecar.get("quantization")
    if not isinstance(quantization, Mapping):
        raise FFNError("config", source, _('must hold a "quantization" object, as ModelOpt writes it'))
    return {**config, "quantization_config": {**quantization, "quant_method": "modelopt"}, FROM_SIDECAR: SIDECAR}


def read_beside(config: dict[str, Any], file: Path, parse: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """`config`, read from the config.json `file`, with the hf_quant_config.json beside it where it
    says no quantization of its own; `parse(path)` reads and parses a JSON file as a config.json is.
    A sidecar that is there but no regular file (a folder, a pipe, a broken link) is refused."""
    beside = file.parent / SIDECAR
    if file.name != "config.json" or has_quantization(config) or not present(beside):
        return config
    if not beside.is_file():
        raise FFNError("config", str(beside), _("is not a regular file"))
    return merged(config, parse(beside), str(beside))
