"""Text the tool did not write (from a file, a path, a model name) printed exactly as it is.

Such text may hold rich markup (`[/]`, `[link=…]`) that would be parsed or crash the renderer,
and control characters (ESC sequences, bells, newlines) that would drive the terminal or break
a one-line error. `visible` spells the control characters out as Python escapes (`\\x1b`,
`\\n`), as `repr` would; `literal` also escapes markup, for text placed into a markup string.
"""

from __future__ import annotations

import unicodedata

from rich.markup import escape

__all__ = ["literal", "visible"]

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
