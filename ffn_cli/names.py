"""Names people type (a preset, a variant, a device, a dtype): read one way everywhere, and a
wrong one answered with the closest right ones, in one short line. Pure Python."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from ffn_cli.errors import FFNError
from ffn_cli.i18n import Message, _

__all__ = ["MAX_LIST_ITEMS", "comma_text", "either_of", "normalise", "split_list", "unknown_name"]

# The most items a comma list option takes (--variant, --d-model, --seq-len, --batch, --dtype,
# --impl, --preset, --config, --model): a sweep's cases multiply, and a longer list is a slip.
MAX_LIST_ITEMS = 64

# A list this long is printed whole in the error; a longer one is named by the command that lists it.
_SHOWN_WHOLE = 8


def normalise(text: str) -> str:
    """' BFloat16 ' → 'bfloat16': names are matched without case and surrounding spaces."""
    return text.strip().lower()


def split_list(option: str, text: str, *, empty: str) -> list[str]:
    """'a, b,a' → ['a', 'b']: stripped, de-duplicated, order kept. Refused: no item (`empty` says
    what the option takes), more than MAX_LIST_ITEMS items, an empty item ('relu,', '64,,128'):
    a stray comma is a typo, not a shorter list."""
    parts = [t.strip() for t in text.split(",")]
    if not any(parts):
        raise FFNError(option, text, empty)
    if len(parts) > MAX_LIST_ITEMS:
        said = _("a comma list takes at most {max} items; this one has {count}")
        raise FFNError(option, text, said.format(max=MAX_LIST_ITEMS, count=f"{len(parts):,}"))
    if not all(parts):
        raise FFNError(option, text, _("an empty item in the comma list: remove the extra comma"))
    return list(dict.fromkeys(parts))


def comma_text(values: Iterable[object]) -> str:
    """A list as the option's comma text, to name it in an error as it would be typed: '128,512'."""
    return ",".join(str(v) for v in values)


def _closest(value: str, names: Sequence[str]) -> list[str]:
    key = normalise(value)
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
    # 'llama-3-70b' for 'llama-3.1-70b', 'qwen3' for 'qwen3-32b': a name that starts alike counts too.
    head = key.split("-")[0]
    alike = [n for n in names if len(head) >= 3 and n.startswith(head) and n not in close]
    return (close + alike)[:3]


def either_of(names: Sequence[str]) -> str:
    """Names said as alternatives: "a, b or c" ("a、b 或 c" in Chinese)."""
    if len(names) == 1:
        return names[0]
    return _("{names} or {last}").format(names=Message.listed(names[:-1]).shown(), last=names[-1])


def unknown_name(option: str, value: str, names: Sequence[str], *, what: str, listed_by: str | None = None, extra: str = "") -> FFNError:
    """The error for a `value` that is none of `names`: the closest names first, then the whole
    list when short, or else the command that prints it (`listed_by`). `extra` names what else
    the option takes (', or all', translated by the caller); `what` is a message id marked with
    N_ by the caller ('preset'), translated here."""
    whole = len(names) <= _SHOWN_WHOLE or listed_by is None
    close = _closest(value, names)[: 1 if len(names) <= _SHOWN_WHOLE else 3]  # among a few, the one nearest
    guess = _("did you mean {names}? ").format(names=either_of(close)) if close else ""
    if whole:
        return FFNError(option, value, _("{guess}choose one of {names}{extra}").format(guess=guess, names=", ".join(names), extra=extra))
    return FFNError(
        option,
        value,
        _("no such {what}; {guess}`{listed_by}` lists all {count}{extra}").format(
            what=_(what), guess=guess, listed_by=listed_by, count=len(names), extra=extra
        ),
    )
