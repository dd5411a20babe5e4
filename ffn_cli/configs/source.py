"""Where a model comes from: a shipped preset, a config.json on disk, or a Hub model id.

Every command that takes a model (`params`, `trace`, `bench`) reads it here, so --preset,
--config and --model mean the same everywhere. The raw config is kept beside the spec: the
dtype it was saved in and its attention windows are read from it, not from the spec.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

from ffn_cli.configs.families import Family, family_of, model_spec_from_config
from ffn_cli.configs.files import load_config, load_preset
from ffn_cli.configs.hub import hub_config
from ffn_cli.configs.hub_env import check_hub_environment
from ffn_cli.configs.unknown import UnknownModelType
from ffn_cli.configs.windows import attention_chunks, attention_windows, is_causal
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.spec import ModelSpec

T = TypeVar("T")

__all__ = ["LoadedModel", "config_dtype", "config_model", "load_model", "load_models", "preset_model"]

# The dtypes a config.json names (torch_dtype, or dtype since transformers 5) that we can run.
_DTYPES = {"float32": "float32", "float": "float32", "bfloat16": "bfloat16", "float16": "float16", "half": "float16", "float64": "float64"}


@dataclass(frozen=True)
class LoadedModel:
    """A model's spec, the config it was read from, and how the user named it."""

    spec: ModelSpec
    config: Mapping[str, Any]
    source: str  # "preset llama-3-8b", "config path/config.json", "model org/name"

    @property
    def dtype(self) -> str | None:
        """The dtype the checkpoint was saved in, or None when the config names none."""
        return config_dtype(self.config)

    @property
    def windows(self) -> tuple[int | None, ...]:
        """Each layer's sliding attention window (None: the layer attends to every earlier key)."""
        return attention_windows(self.config, self.spec.n_layers)

    @property
    def chunks(self) -> tuple[int | None, ...]:
        """Each layer's attention chunk (Llama 4), or None."""
        return attention_chunks(self.config, self.spec.n_layers)

    @property
    def family(self) -> Family:
        """The family that read the spec: every LoadedModel's spec comes from one."""
        family = family_of(self.spec.model_type)
        if family is None:
            raise LookupError(f"no family reads {self.spec.model_type}")
        return family

    @property
    def causal(self) -> bool:
        return is_causal(self.spec.model_type)


def config_dtype(config: Mapping[str, Any]) -> str | None:
    """torch_dtype (or dtype), at the top level or in a multimodal config's text_config."""
    text = config.get("text_config")
    for where in (config, text if isinstance(text, Mapping) else {}):
        for key in ("torch_dtype", "dtype"):
            value = where.get(key)
            if isinstance(value, str) and value.removeprefix("torch.") in _DTYPES:
                return _DTYPES[value.removeprefix("torch.")]
    return None


def load_model(
    *, preset: str | None = None, config: str | None = None, model: str | None = None, revision: str | None = None
) -> LoadedModel:
    """The one model named by exactly one of preset, config and model."""
    given = {k: v for k, v in (("preset", preset), ("config", config), ("model", model)) if v is not None}
    if len(given) != 1:
        option = next(iter(given), "preset")
        raise FFNError(option, given.get(option), _("give one of --preset, --config and --model, not both"))
    if revision is not None and model is None:
        raise FFNError("revision", revision, _("applies to --model (a Hub model id)"))
    if preset is not None:
        key = preset.strip().lower()
        raw = load_preset(key)
        return LoadedModel(model_spec_from_config(raw, name=key, source=f"preset {key}"), raw, f"preset {key}")
    if config is not None:
        raw, file = load_config(config), Path(config)
        label = file.name if file.is_dir() else file.parent.name if file.name == "config.json" else file.stem
        name = str(raw.get("_name_or_path") or label or config)
        return LoadedModel(model_spec_from_config(raw, name=name, source=config), raw, f"config {config}")

    name = str(model).strip()
    check_hub_environment()
    try:
        raw, _path = hub_config(name, revision)
    except FFNError as exc:
        if exc.option != "config":
            raise
        # The file came from the Hub for --model, not from a --config the user gave.
        raise FFNError("model", name, _("its config.json {allowed}").format(allowed=exc.allowed)) from None
    where = name + (f"@{revision.strip()}" if revision else "")
    try:
        spec = model_spec_from_config(raw, name=name, source=where)
    except FFNError as exc:
        if exc.option != "config":
            raise
        # The reader names the file it read: for --model, the model's own config.json.
        raise FFNError("model", where, exc.allowed) from None
    return LoadedModel(spec, raw, f"model {where}")


@overload
def load_models(
    *,
    preset: tuple[str, ...] | None = None,
    config: tuple[str, ...] | None = None,
    model: tuple[str, ...] | None = None,
    revision: str | None = None,
    unknown: None = None,
) -> list[LoadedModel]: ...


@overload
def load_models(
    *,
    preset: tuple[str, ...] | None = None,
    config: tuple[str, ...] | None = None,
    model: tuple[str, ...] | None = None,
    revision: str | None = None,
    unknown: Callable[[UnknownModelType], T],
) -> list[LoadedModel | T]: ...


def load_models(
    *,
    preset: tuple[str, ...] | None = None,
    config: tuple[str, ...] | None = None,
    model: tuple[str, ...] | None = None,
    revision: str | None = None,
    unknown: Callable[[UnknownModelType], T] | None = None,
) -> list[LoadedModel] | list[LoadedModel | T]:
    """Every model named by the three options together, each a list (the request's, read from
    the command line's comma text: requests/lists.py): presets, then config files, then model
    ids, side by side. A model_type no reader knows is raised, or, given `unknown`, stands as
    what it makes of it (its layout read from transformers' modules)."""
    if preset is None and config is None and model is None:
        raise FFNError("preset", None, _("give --preset, --config or --model (each a comma list, in any mix)"))
    if revision is not None and model is None:
        raise FFNError("revision", revision, _("applies to --model (a Hub model id)"))
    named: list[dict[str, Any]] = [{"preset": p} for p in preset or ()] + [{"config": c} for c in config or ()]
    named += [{"model": m, "revision": revision} for m in model or ()]
    loaded: list[LoadedModel | T] = []
    for one in named:
        try:
            loaded.append(load_model(**one))
        except UnknownModelType as exc:
            if unknown is None:
                raise
            loaded.append(unknown(exc))
    return loaded


def config_model(path: str) -> ModelSpec:
    """The ModelSpec of a config.json (or a model directory holding one), named after its
    `_name_or_path`, else its directory (for a config.json) or its file name."""
    config, file = load_config(path), Path(path)
    label = file.name if file.is_dir() else file.parent.name if file.name == "config.json" else file.stem
    return model_spec_from_config(config, name=str(config.get("_name_or_path") or label or path), source=path)


def preset_model(name: str) -> ModelSpec:
    """The ModelSpec of a shipped preset, named after it."""
    key = name.strip().lower()
    return model_spec_from_config(load_preset(key), name=key, source=f"preset {key}")
