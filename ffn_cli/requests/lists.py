"""Lists of values an option takes: read from the command line's comma text once, at the CLI's
boundary ('relu,swiglu', '512,1024'), and checked as a request holds them (a tuple, from the
command line or as the API's keywords gave them), one way everywhere."""

from __future__ import annotations

from pathlib import Path

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.names import (
    MAX_LIST_ITEMS,
    comma_text,  # a list named as typed: the inverse of the split here
    split_list,
)
from ffn_cli.spec import check_int

__all__ = [
    "check_ints",
    "check_names",
    "check_paths",
    "comma_text",
    "parse_int_list",
    "parse_int_tuple",
    "parse_list",
    "parse_names",
    "parse_paths",
    "parse_tuple",
]


def parse_list(option: str, text: str, *, empty: str | None = None) -> list[str]:
    """'a, b,a' → ['a', 'b'] (names.split_list: at most MAX_LIST_ITEMS items, none empty);
    `empty` says what the option takes when no item is given."""

    return split_list(option, text, empty=_("one value or a comma list") if empty is None else empty)


def parse_int_list(option: str, text: str) -> list[int]:
    """'512,1024' → [512, 1024], each checked as that option's integer."""
    values = []
    for item in parse_list(option, text):
        # isdigit() alone accepts '²', which int() refuses; no size has 20 digits, and int()
        # refuses 4,300 with an error of its own.
        signed = item[1:] if item[:1] in "+-" else item
        if not (signed.isascii() and signed.isdigit()):
            raise FFNError(option, text, _("an integer or a comma list of integers"))
        if len(item) > 19:
            raise FFNError(option, f"{item[:10]}…({len(item)} digits)", _("far too large for a size"))
        values.append(check_int(option, int(item)))
    return values


def parse_tuple(option: str, text: str) -> tuple[str, ...]:
    """The command line's comma text as a request's tuple of names."""
    return tuple(parse_list(option, text))


def parse_names(option: str, text: str) -> tuple[str, ...]:
    """--preset's and --model's comma text as a request's tuple of names: 'gpt2, llama-2-7b'."""
    return tuple(parse_list(option, text, empty=_("one name or a comma list")))


def parse_paths(option: str, text: str) -> tuple[str, ...]:
    """--config's comma text as a request's tuple of paths: a path that exists as typed is one
    file, commas and all, and so is text without a comma (kept as typed, spaces too)."""

    return (text,) if "," not in text or Path(text).expanduser().exists() else parse_names(option, text)


def parse_int_tuple(option: str, text: str) -> tuple[int, ...]:
    """The command line's comma text as a request's tuple of integers."""
    return tuple(parse_int_list(option, text))


def _listed(option: str, values: tuple[object, ...]) -> tuple[object, ...]:
    """The values de-duplicated, order kept; as many as a comma list may hold, and at least one."""

    if not values:
        raise FFNError(option, values, _("one value or a comma list"))
    if len(values) > MAX_LIST_ITEMS:
        said = _("a comma list takes at most {max} items; this one has {count}")
        raise FFNError(option, comma_text(values), said.format(max=MAX_LIST_ITEMS, count=f"{len(values):,}"))
    return tuple(dict.fromkeys(values))


def check_ints(option: str, values: tuple[int, ...]) -> tuple[int, ...]:
    """A request's list of integers (seq_len=(128, 512)): each one that option's integer."""
    return tuple(check_int(option, v) for v in _listed(option, tuple(values)))


def check_names(option: str, values: tuple[str, ...]) -> tuple[str, ...]:
    """A request's list of names (dtype=('float32', 'bfloat16')): each a name, none empty."""
    for value in values:
        if not isinstance(value, str) or not value.strip():
            raise FFNError(option, value, _("one value or a comma list"))
    return tuple(str(v) for v in _listed(option, tuple(v.strip() for v in values)))


def check_paths(option: str, values: tuple[str, ...]) -> tuple[str, ...]:
    """A request's list of paths (config=('a.json', 'b.json')): each a path as given, not
    stripped (a file is read as it is named; one that is not there says so)."""
    for value in values:
        if not isinstance(value, str):
            raise FFNError(option, value, _("one value or a comma list"))
    return tuple(str(v) for v in _listed(option, tuple(values)))
