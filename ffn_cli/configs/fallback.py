"""Counting a model no reader knows, by building it with transformers on the meta device.

The readers in families/ stay the source of truth for the families they know; this path
answers for every other `model_type` the installed transformers can build. This module is
torch-free: it holds the result, the refusals, and the lazy step into ffn_cli.configs.meta_build
(which imports torch and transformers) only when a count is asked for.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

from ffn_cli.configs.built import PART_NAMES, BuiltLayout, BuiltModel, BuiltPart, RoutedExperts
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _

__all__ = [
    "EXTRA",
    "PART_NAMES",
    "REMOTE_CODE",
    "BuiltLayout",
    "BuiltModel",
    "BuiltPart",
    "RoutedExperts",
    "count_by_building",
    "layout_by_building",
    "require_transformers",
    "transformers_available",
]

REMOTE_CODE = N_("this config needs trust_remote_code; ffn never runs a model's own code")
# Double quotes: the one spelling every shell (sh, zsh, cmd, PowerShell) passes through whole.
EXTRA = 'pip install "ffn-cli[transformers]"'


def transformers_available() -> bool:
    # An import hook may refuse the name outright (ImportError) rather than not find it (None).
    try:
        return importlib.util.find_spec("transformers") is not None
    except ImportError:
        return False


def require_transformers(model_type: object, known: tuple[str, ...]) -> None:
    """A model_type no reader knows is built with transformers, the optional extra: without it,
    say which families ffn reads itself and how to install the extra."""
    if not transformers_available():
        raise FFNError(
            "model_type",
            model_type,
            _("ffn reads {known} itself; any architecture transformers knows needs transformers: {extra}").format(
                known=", ".join(known), extra=EXTRA
            ),
        )


def count_by_building(config: Mapping[str, Any], *, name: str, source: str, known: tuple[str, ...]) -> BuiltModel:
    """Count a config whose `model_type` no reader knows (`known` lists those that do) by
    building it with transformers on the meta device: no weights, never remote code."""
    _check_known(config, source=source, known=known)
    from ffn_cli.configs import meta_build  # torch and transformers: only on this path

    return meta_build.count(config, name=name, source=source)


def _check_known(config: Mapping[str, Any], *, source: str, known: tuple[str, ...]) -> None:
    model_type = config.get("model_type")
    require_transformers(model_type, known)
    from ffn_cli.configs import meta_build

    if not meta_build.knows(str(model_type)) and meta_build.architecture_model_type(config) is None:
        if config.get("auto_map"):
            raise FFNError("config", source, _(REMOTE_CODE))
        raise FFNError(
            "model_type",
            model_type,
            _("neither ffn (which reads {known}) nor transformers {version} knows it").format(
                known=", ".join(known), version=meta_build.version()
            ),
        )


def layout_by_building(config: Mapping[str, Any], *, name: str, source: str, known: tuple[str, ...]) -> BuiltLayout:
    """The ModelSpec of a config whose `model_type` no reader knows, read from one decoder layer
    of each kind built with transformers on meta (ffn_cli.configs.layer_read), for the answers
    that fold over a spec: bytes as stored, per-GPU memory, decode state, roofline."""
    _check_known(config, source=source, known=known)
    from ffn_cli.configs import layer_read  # torch and transformers: only on this path

    return layer_read.read_layout(config, name=name, source=source)
