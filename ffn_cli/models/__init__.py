"""Real models and the layer around one FFN, pure Python (no torch).

config.json or a preset → `ModelSpec` → `count_model` → `ModelParams`; and one FFN beside its
attention → `ffn_report` / `compare_variants`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ffn_cli.models.comparison import Comparison, compare_variants, match_d_ff
    from ffn_cli.models.config import load_config, load_preset, parse_config, preset_names
    from ffn_cli.models.count import ModelParams, ModelPart, TrainingMemory, count_model, training_memory
    from ffn_cli.models.families import SUPPORTED_MODEL_TYPES, model_spec_from_config
    from ffn_cli.models.layer import BACKWARD_FACTOR, FFNReport, TensorGroup, ffn_report
    from ffn_cli.models.spec import ModelSpec

__all__ = [
    "BACKWARD_FACTOR",
    "SUPPORTED_MODEL_TYPES",
    "Comparison",
    "FFNReport",
    "ModelParams",
    "ModelPart",
    "ModelSpec",
    "TensorGroup",
    "TrainingMemory",
    "compare_variants",
    "config_model",
    "count_model",
    "ffn_report",
    "load_config",
    "load_preset",
    "match_d_ff",
    "model_spec_from_config",
    "parse_config",
    "preset_model",
    "preset_names",
    "training_memory",
]


# Each name loads its module on first use: `ffn params` for one FFN reads none of the model
# readers, and importing one submodule (models.layer) runs this file first.
_MODULES = {
    "config": ("load_config", "load_preset", "parse_config", "preset_names"),
    "count": ("ModelParams", "ModelPart", "TrainingMemory", "count_model", "training_memory"),
    "families": ("SUPPORTED_MODEL_TYPES", "model_spec_from_config"),
    "comparison": ("Comparison", "compare_variants", "match_d_ff"),
    "layer": ("BACKWARD_FACTOR", "FFNReport", "TensorGroup", "ffn_report"),
    "spec": ("ModelSpec",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"ffn_cli.models.{_HOME[name]}"), name)
    raise AttributeError(f"module 'ffn_cli.models' has no attribute {name!r}")


def config_model(path: str) -> ModelSpec:
    """The ModelSpec of a config.json (or a model directory holding one), named after its
    `_name_or_path`, else its directory (for a config.json) or its file name."""
    from ffn_cli.models.config import load_config
    from ffn_cli.models.families import model_spec_from_config

    config, file = load_config(path), Path(path)
    label = file.name if file.is_dir() else file.parent.name if file.name == "config.json" else file.stem
    return model_spec_from_config(config, name=str(config.get("_name_or_path") or label or path), source=path)


def preset_model(name: str) -> ModelSpec:
    """The ModelSpec of a shipped preset, named after it."""
    from ffn_cli.models.config import load_preset
    from ffn_cli.models.families import model_spec_from_config

    key = name.strip().lower()
    return model_spec_from_config(load_preset(key), name=key, source=f"preset {key}")
