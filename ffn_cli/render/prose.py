"""A line of prose under a table that wraps at its spaces but never between a number and its
unit: rich breaks at any whitespace (a no-break space too), so a wrapped "(-23.7 %)" could leave
its "%)" at the start of the next line, or a "≥" at the end of one."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.text import Text

from ffn_cli.render.fit import UNIT

__all__ = ["ProseLine"]

# A word, with every number in it that a unit follows taking that unit along (12.5 %, 0.93 ms,
# 2.35 s; "0.76 ms（-38.4 %），" is one word), and a bound's sign its number (≥ 0.18 ms).
_WORD = re.compile(rf"(?:\S*?(?:\d (?={UNIT}(?![\w/]))|[≥≤] (?=\d)))*\S+")


class ProseLine:
    """`text` in `style`, filled greedily to the width it is given; a word wider than that is
    left to rich, which folds it."""

    def __init__(self, text: str, style: str = "") -> None:
        self.text = text
        self.style = style

    @property
    def plain(self) -> str:
        return self.text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        width, line = options.max_width, ""
        for word in _WORD.findall(self.text):
            if line and cell_len(line) + 1 + cell_len(word) > width:
                yield Text(line, style=self.style)
                line = word
            else:
                line = f"{line} {word}" if line else word
        yield Text(line, style=self.style)
