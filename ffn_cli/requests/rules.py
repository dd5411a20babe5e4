"""The rules a request checks its options by, declared rather than written out: which option
another rules out (`Conflicts`), which one needs another (`Needs`), which one this answer cannot
use (`Unused`). One rule says what counts as given (`given_options`), for the CLI and the API alike.

A rule names options by their request field (the option `--no-mtp` is `no_mtp`); a group of
names is a tuple, read in order: the first one given is the one the error names. Each rule's
words are a message id, translated when it is raised."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.requests.lists import comma_text

__all__ = ["Conflicts", "Needs", "Rule", "Unused", "check_rules", "given_options"]

Names = str | tuple[str, ...]


def given_options(values: Mapping[str, Any], defaults: Mapping[str, Any], typed: Iterable[str] = ()) -> dict[str, Any]:
    """The options given, in the order of `values`, with their values: each one typed (on the
    command line: even at its default, `--phase prefill`), or holding other than its default
    (what the API's keywords can tell)."""
    typed = frozenset(typed)
    return {name: value for name, value in values.items() if name in typed or value != defaults.get(name)}


def _names(names: Names) -> tuple[str, ...]:
    return (names,) if isinstance(names, str) else names


_NOT_ALLOWED = object()


def _refuse_first(names: Names, given: Mapping[str, Any], why: str, allowed: Mapping[str, Any] | None = None) -> None:
    for name in _names(names):
        if name in given and (allowed is None or given[name] != allowed.get(name, _NOT_ALLOWED)):
            value = given[name]  # a list is named as it is typed: `-s 128,512`
            raise FFNError(name, comma_text(value) if isinstance(value, tuple) else value, _(why))


@dataclass(frozen=True)
class Conflicts:
    """`a` is refused beside any of `b`: the answer `b` asks for would ignore it."""

    a: Names
    b: Names
    why: str

    def check(self, given: Mapping[str, Any]) -> None:
        if any(name in given for name in _names(self.b)):
            _refuse_first(self.a, given, self.why)


@dataclass(frozen=True)
class Needs:
    """`a` is refused unless one of `b` is given too: alone it would change nothing."""

    a: Names
    b: Names
    why: str

    def check(self, given: Mapping[str, Any]) -> None:
        if not any(name in given for name in _names(self.b)):
            _refuse_first(self.a, given, self.why)


@dataclass(frozen=True)
class Unused:
    """`a` is refused outright: the answer chosen has no use for it. `allowed`: (option, value)
    pairs it may still hold, a value that changes nothing (`--dropout 0` where dropout is not run)."""

    a: Names
    why: str
    allowed: tuple[tuple[str, Any], ...] = ()

    def check(self, given: Mapping[str, Any]) -> None:
        _refuse_first(self.a, given, self.why, dict(self.allowed))


Rule = Conflicts | Needs | Unused


def check_rules(rules: Iterable[Rule], given: Mapping[str, Any]) -> None:
    """Each rule in turn: the first one broken raises its one-line error."""
    for rule in rules:
        rule.check(given)
