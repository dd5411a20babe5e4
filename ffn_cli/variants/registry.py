"""The variant registry as a mapping: name → the variant's object, its module imported the
first time the name is looked up. A command about one variant loads that variant's file (and
its bases) alone; iterating the values loads them all, in the registry's order."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ffn_cli.variants.base import Variant

__all__ = ["Registry"]


class Registry(Mapping[str, "Variant"]):
    """`where` maps each name to "package.module:Class", the class whose instance it names."""

    def __init__(self, where: dict[str, str]) -> None:
        self._where = where
        self._loaded: dict[str, Variant] = {}

    def __getitem__(self, name: str) -> Variant:
        variant = self._loaded.get(name)
        if variant is None:
            module_name, _, class_name = self._where[name].partition(":")  # KeyError for a name not here
            variant = getattr(importlib.import_module(module_name), class_name)()
            self._loaded[name] = variant
        return variant

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def where(self, name: str) -> str:
        """Where the class of `name` lives, "package.module:Class" (nothing is imported)."""
        return self._where[name]
