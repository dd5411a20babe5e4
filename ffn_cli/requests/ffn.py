"""The FFN a request is about, as the commands' FFN options describe it (`cli/ffn_options.py`:
tuples of variants and widths, read from the command line's comma lists) or as the API hands it
(one FFNSpec): what a request reads of either, so neither knows the other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ffn_cli.spec import FFNSpec

__all__ = ["FFNChoice", "OneSpec"]


class FFNChoice(Protocol):
    """The FFN options as parsed: the variants and widths asked for, and which were typed."""

    @property
    def variant(self) -> tuple[str, ...]: ...
    @property
    def d_model(self) -> tuple[int, ...]: ...
    @property
    def fused(self) -> bool: ...
    @property
    def multiple_of(self) -> int: ...

    def typed(self, names: tuple[str, ...] | None = None) -> dict[str, Any]: ...
    def variants(self) -> list[str]: ...
    def spec(self, variant: str, d_model: int, **changes: Any) -> FFNSpec: ...
    def check_used(self, specs: list[FFNSpec]) -> None: ...


@dataclass(frozen=True)
class OneSpec:
    """One FFNSpec as the FFN a request is about: its own variant and width, nothing typed."""

    value: FFNSpec

    @property
    def variant(self) -> tuple[str, ...]:
        return (self.value.variant,)

    @property
    def d_model(self) -> tuple[int, ...]:
        return (self.value.d_model,)

    @property
    def fused(self) -> bool:
        return self.value.fused_gate_up

    @property
    def multiple_of(self) -> int:
        return self.value.multiple_of

    def typed(self, names: tuple[str, ...] | None = None) -> dict[str, Any]:
        return {}  # a spec's fields are its own, not options that could be refused

    def variants(self) -> list[str]:
        return [self.value.variant]

    def spec(self, variant: str, d_model: int, **changes: Any) -> FFNSpec:
        return self.value.with_(**changes)

    def check_used(self, specs: list[FFNSpec]) -> None:
        """A spec's fields are checked by FFNSpec itself."""
