"""Text that wraps Chinese as Chinese is wrapped: between any two characters, not only at spaces.

rich breaks a line at whitespace alone, so a Chinese sentence is one long "word": in a table
cell it is cropped with an ellipsis or pushed whole onto its own line. `WrappingText` is a rich
`Text` whose line breaks may also fall beside any wide (CJK) character, except before closing
punctuation (，。）…) or after opening punctuation (（“…), and whose minimum width is its
widest unbreakable piece. English text wraps exactly as rich wraps it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from typing import Any

from rich.cells import cell_len, chop_cells
from rich.measure import Measurement
from rich.text import Lines, Text

__all__ = ["WrappingText", "wrapping"]

# No line starts with these, and none ends with the opening ones.
_CLOSING = set("，。、；：？！）》」』】〕’”…·,.;:?!)]}%")
_OPENING = set("（《「『【〔‘“([{")


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def _can_break(text: str, i: int) -> bool:
    """Whether a line may start at text[i]."""
    before, here = text[i - 1], text[i]
    if here.isspace():
        return False
    if before.isspace():
        return True
    if here in _CLOSING or before in _OPENING:
        return False
    return _wide(before) or _wide(here)


def _pieces(text: str) -> Iterator[tuple[int, str]]:
    """(start, piece): the unbreakable pieces of a line, each with the spaces after it."""
    start = 0
    for i in range(1, len(text)):
        if _can_break(text, i):
            yield start, text[start:i]
            start = i
    if text:
        yield start, text[start:]


def _break_offsets(text: str, width: int, fold: bool) -> list[int]:
    """Where to break `text` to fit `width` cells: rich's greedy rule, over pieces, not words."""
    breaks: list[int] = []
    offset = 0
    for start, piece in _pieces(text):
        length = cell_len(piece.rstrip())
        if width - offset >= length:
            offset += cell_len(piece)
            continue
        if length > width and fold:
            chunks = chop_cells(piece, width)
            for n, chunk in enumerate(chunks):
                if start:
                    breaks.append(start)
                if n == len(chunks) - 1:
                    offset = cell_len(chunk)
                else:
                    start += len(chunk)
        elif start:
            breaks.append(start)
            offset = cell_len(piece)
    return breaks


class WrappingText(Text):
    """A rich Text that may also break beside Chinese characters (see the module's text)."""

    def wrap(
        self,
        console: Any,
        width: int,
        *,
        justify: Any = None,
        overflow: Any = None,
        tab_size: int = 8,
        no_wrap: bool | None = None,
    ) -> Lines:
        wrap_overflow = overflow or self.overflow or "fold"
        if no_wrap or self.no_wrap or overflow == "ignore" or not any(_wide(ch) for ch in self.plain):
            return super().wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap)
        lines = Lines()
        for line in self.split(allow_blank=True):
            if "\t" in line:
                line.expand_tabs(tab_size)
            new_lines = line.divide(_break_offsets(line.plain, width, fold=True))
            for part in new_lines:
                part.rstrip()  # a broken line's trailing space (rich's rstrip_end counts characters, not cells)
            wrap_justify = justify or self.justify or "default"
            new_lines.justify(console, width, justify=wrap_justify, overflow=wrap_overflow)
            for part in new_lines:
                part.truncate(width, overflow=wrap_overflow)
            lines.extend(new_lines)
        return lines

    def __rich_measure__(self, console: Any, options: Any) -> Measurement:
        measured = super().__rich_measure__(console, options)
        if not any(_wide(ch) for ch in self.plain):
            return measured
        pieces = [cell_len(p.rstrip()) for line in self.plain.splitlines() for _, p in _pieces(line)]
        return Measurement(max(pieces, default=0), measured.maximum)


def wrapping(text: Text) -> WrappingText:
    """`text` (styles and all) as a WrappingText."""
    wrapped = WrappingText(style=text.style, justify=text.justify, overflow=text.overflow, no_wrap=text.no_wrap, end=text.end)
    wrapped.append_text(text)
    return wrapped
