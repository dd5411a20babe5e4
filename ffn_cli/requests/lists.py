"""Comma lists as options give them ('relu,swiglu', '512,1024'), read one way everywhere."""

from __future__ import annotations

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.spec import check_int

__all__ = ["parse_int_list", "parse_list"]


def parse_list(option: str, text: str) -> list[str]:
    """'a, b,a' → ['a', 'b'] (names.split_list: at most MAX_LIST_ITEMS items, none empty)."""
    from ffn_cli.names import split_list

    return split_list(option, text, empty=_("one value or a comma list"))


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
