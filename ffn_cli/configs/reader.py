"""Typed access to one config.json dict: every failure is an FFNError naming the key.

A key the config leaves out (or sets to null) takes the default the family's config class
has in transformers, which each reader passes in; a few keys have aliases that transformers'
`attribute_map` accepts (Qwen3-MoE's `num_experts` for `num_local_experts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.spec import MAX_DIM, check_int
from ffn_cli.values import is_finite_number

__all__ = ["REQUIRED", "ConfigReader"]

REQUIRED: Any = object()


class ConfigReader:
    def __init__(
        self, config: Mapping[str, Any], model_type: str, source: str, aliases: Mapping[str, str] | None = None, prefix: str = ""
    ) -> None:
        self.config, self.model_type, self.source = config, model_type, source
        self.aliases = dict(aliases or {})
        self.prefix = prefix  # "vision_config." inside a nested config, so errors name the whole key

    def key(self, key: str) -> str:
        return self.prefix + key

    def has(self, key: str) -> bool:
        return self._raw(key) is not None

    def _raw(self, key: str) -> Any:
        value = self.config.get(key)
        if value is None and key in self.aliases:
            value = self.config.get(self.aliases[key])
        return value

    def get(self, key: str, default: Any = REQUIRED) -> Any:
        value = self._raw(key)
        if value is None:
            if default is REQUIRED:
                raise FFNError(
                    "config",
                    self.source,
                    _("missing key {key!r}, which model_type {model_type!r} needs").format(key=self.key(key), model_type=self.model_type),
                )
            return default
        return value

    def integer(self, key: str, default: Any = REQUIRED, *, minimum: int = 1) -> int:
        return check_int(self.key(key), self.get(key, default), minimum=minimum, maximum=MAX_DIM)

    def opt_integer(self, key: str, default: int | None = None, *, minimum: int = 1) -> int | None:
        value = self._raw(key)
        if value is None:
            return default
        return check_int(self.key(key), value, minimum=minimum, maximum=MAX_DIM)

    def number(self, key: str, default: Any = REQUIRED) -> float:
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FFNError(self.key(key), value, _("must be a number"))
        if not is_finite_number(value):  # JSON's NaN and Infinity, which Python's json reads
            raise FFNError(self.key(key), value, _("must be a finite number"))
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise FFNError(self.key(key), value, _("must be true or false"))
        return value

    def text(self, key: str, default: Any = REQUIRED) -> str:
        value = self.get(key, default)
        if not isinstance(value, str) or not value:
            raise FFNError(self.key(key), value, _("must be a non-empty string"))
        return value

    def layer_list(self, key: str, default: list[int] | None = None) -> tuple[int, ...]:
        value = self.get(key, default if default is not None else [])
        if not isinstance(value, list):
            raise FFNError(self.key(key), value, _("must be a list of layer indices"))
        return tuple(check_int(self.key(key), v, minimum=0, maximum=MAX_DIM) for v in value)

    def mapping(self, key: str) -> Mapping[str, Any] | None:
        """A nested config (text_config, vision_config), or None when absent."""
        value = self.config.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise FFNError(self.key(key), value, _("must be a JSON object (a nested config)"))
        return value

    def nested(self, key: str, model_type: str, defaults: Mapping[str, Any] | None = None) -> ConfigReader:
        """A reader of a nested config; when the config has none, of `defaults` (the outer class's sub-config defaults)."""
        inner = self.mapping(key)
        data = dict(defaults or {}) if inner is None else dict(inner)
        return ConfigReader(data, str(data.get("model_type") or model_type), self.source, prefix=self.key(key) + ".")
