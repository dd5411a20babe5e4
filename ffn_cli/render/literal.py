"""Text the tool did not write (from a file, a path, a model name) printed exactly as it is.

Such text may hold rich markup (`[/]`, `[link=…]`) that would be parsed or crash the renderer,
and control characters (ESC sequences, bells, newlines) that would drive the terminal or break
a one-line error. `visible` spells the control characters out as Python escapes (`\\x1b`,
`\\n`), as `repr` would; `literal` also escapes markup, for text placed into a markup string;
`visible_strings` does it to every string a result holds (the names of a user's module: its
class, submodules and parameters), once, before a view is drawn from it.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import Any, TypeVar

from rich.markup import escape

from ffn_cli.i18n import Message

__all__ = ["literal", "visible", "visible_strings"]

T = TypeVar("T")

# Cc: C0/C1 controls (ESC, BEL, CR, …); Cf: invisible format characters (bidi overrides that
# reorder what follows them); Zl, Zp: line and paragraph separators.
_HIDDEN = {"Cc", "Cf", "Zl", "Zp"}


def visible(text: object) -> str:
    """`text` with every control or invisible format character written as its Python escape."""
    value = str(text)
    if value.isprintable():  # the common case, in C
        return value
    return "".join(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in _HIDDEN else ch for ch in value)


def literal(text: object) -> str:
    """`text` made safe to embed in rich markup: printed as it is, never interpreted."""
    return escape(visible(text))


def visible_strings(value: T) -> T:
    """`value` with every string in it made `visible`: dataclasses, tuples, lists, dicts and
    Messages (their arguments) walked. What holds nothing to spell out comes back as the same
    object, so a result of plain names costs one walk and no copy."""
    return _walk(value)


def _walk(value: Any) -> Any:
    if isinstance(value, Message):
        return _message(value)
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, (tuple, list)):
        items = [_walk(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)  # a named tuple takes its fields
    if isinstance(value, dict):
        pairs = [(_walk(k), _walk(v)) for k, v in value.items()]
        same = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {}
        for f in dataclasses.fields(value):
            if f.init:
                old = getattr(value, f.name)
                new = _walk(old)
                if new is not old:
                    changed[f.name] = new
        return dataclasses.replace(value, **changed) if changed else value
    return value


def _message(message: Message) -> Message:
    parts, args = _walk(message.parts), _walk(message.args)
    if parts is message.parts and args is message.args:
        return message
    return Message(message.msgid, parts=parts, **args)
