"""NVIDIA ModelOpt's hf_quant_config.json: the quantization of a checkpoint whose config.json
carries none (nvidia/DeepSeek-V3.2-NVFP4's, Nemotron 3's NVFP4 and FP8 ones), read as vLLM reads
it. Its `quantization` object becomes the config's `quantization_config` (quant_method modelopt),
and the config says where it came from. JSON only, as a config.json is read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _

__all__ = ["FROM_SIDECAR", "SIDECAR", "has_quantization", "merged", "read_beside"]

SIDECAR = "hf_quant_config.json"
# The key a config read with its sidecar carries: the file its quantization_config came from.
FROM_SIDECAR = "_quantization_from"


def has_quantization(config: Mapping[str, Any]) -> bool:
    """Whether config.json says its own quantization (at its top or in its text_config)."""
    text = config.get("text_config")
    return config.get("quantization_config") is not None or (isinstance(text, Mapping) and text.get("quantization_config") is not None)


def merged(config: dict[str, Any], text: str, source: str) -> dict[str, Any]:
    """`config` with the sidecar's `quantization` as its quantization_config; a sidecar that is
    not JSON, or holds no such object, is refused by its name."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError):
        raise FFNError("config", source, _("is not valid JSON")) from None
    quantization = data.get("quantization") if isinstance(data, dict) else None
    if not isinstance(quantization, Mapping):
        raise FFNError("config", source, _('must hold a "quantization" object, as ModelOpt writes it'))
    return {**config, "quantization_config": {"quant_method": "modelopt", **quantization}, FROM_SIDECAR: SIDECAR}


def read_beside(config: dict[str, Any], folder: Path, read: Any) -> dict[str, Any]:
    """`config` with the hf_quant_config.json in `folder`, where config.json has no quantization
    of its own and the folder holds one; `read(file)` reads it as a config.json is read."""
    file = folder / SIDECAR
    if has_quantization(config) or not file.is_file():
        return config
    return merged(config, read(file), str(file))
