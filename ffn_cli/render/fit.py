"""Tables and bar charts that fit the terminal they are printed in.

The rule, shared by every table the tool prints: a number is printed whole or not at all.
Number and shape cells never wrap or shrink; notes wrap at word boundaries, sums of terms
between their terms. When the columns do not fit the width, whole columns leave: first any
that hold nothing (every cell blank or `—`), then lowest `drop` first, columns that share a
`drop` together (a pair read together, such as min and max, leaves as one). A one-line
footnote under the table names each one that left:

    2 columns hidden at 80 columns (formula, origin): widen the terminal, or --json

Columns with `drop=None` (the row's name and its main numbers) always stay.

Where a column is too wide to stay but too important to leave (the weight shapes of a trace),
the renderer offers the same data laid out more than one way, widest first (`Layouts`): at each
width the first layout whose tables keep every column is drawn, so at a narrow width the wide
column moves to a table of its own instead of leaving.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ffn_cli.i18n import _, ngettext

__all__ = [
    "GAP",
    "LABEL_FLOOR",
    "UNBREAKABLE",
    "UNIT",
    "BarChart",
    "Col",
    "FitTable",
    "Layouts",
    "Wide",
    "add_words",
    "hidden_note",
    "unbroken_words",
    "wrap_terms",
    "wrap_wide",
]

# Cells between two columns: one of padding, one of the (blank) divider.
GAP = 2
_NARROWEST_TEXT = 8  # the fewest cells a text column gives up to when a table cannot fit otherwise
# The widest word a text column keeps whole where a column that never leaves would not fit
# beside it; a longer one (a module path) then folds inside it.
FOLD_AT = 24
# A wrapped text column is never squeezed narrower than this (or its longest line, if shorter):
# a column of two-word lines is harder to read than a column fewer.
TEXT_FLOOR = 16
# A column of row labels ("active params/token", 每 token 激活参数) grows to this before the text beside
# it does: a label broken in the middle of a word (Chinese has no spaces to break at) reads as two.
LABEL_FLOOR = 20
# A "terms" cell (a sum such as `2·d·d_ff + d_ff + d`) breaks only here; its next line starts `+ `.
TERM_JOIN = " + "
# Cells that say "nothing here": a column of only these is the first to leave.
EMPTY_CELLS = ("", "—")
Kind = Literal["num", "fixed", "text", "terms"]
Cell = str | Text  # a str is rich markup


@dataclass(frozen=True)
class Col:
    """One column. kind: "num" (right-aligned, each line whole), "fixed" (left-aligned, each
    line whole: names, shapes), "text" (wraps at word boundaries), "terms" (a sum, wrapped only
    before a ` + `, each term whole). drop: the order in which the column leaves a narrow
    terminal (1 first; equal values leave together); None keeps it. floor: the narrowest a
    "text" or "terms" column is squeezed to before a column leaves (or its widest line).
    legend: what the column holds, said under the table with the caption while it is shown."""

    header: str
    kind: Kind = "num"
    drop: int | None = None
    footer: Cell = ""
    style: str = ""
    floor: int = TEXT_FLOOR
    legend: str = ""


def _text(cell: Cell) -> Text:
    # Markup the tool wrote, but never emoji codes: a ':name:' in a model's name stays as typed.
    return Text.from_markup(cell, emoji=False) if isinstance(cell, str) else cell


def _lines(cell: Cell) -> list[str]:
    return _text(cell).plain.split("\n")


def _longest(lines: Sequence[str]) -> int:
    return max((cell_len(line) for line in lines), default=0)


def _pieces(word: str) -> list[str]:
    """What a line may not be broken inside: a run of narrow characters. Chinese is written
    without spaces and breaks between any two of its (double-width) characters."""
    pieces, run = [], ""
    for ch in word:
        if cell_len(ch) > 1:
            pieces += [run, ch] if run else [ch]
            run = ""
        else:
            run += ch
    return [*pieces, run] if run else pieces


# A number with its unit (12.55 GiB, 295.4 FLOP/B, -23.7 %, 4,096 tokens), a shape ((B·T, d),
# (2048, 512)), an identity between two bracketed products ((xW₁)W₂ = x(W₁W₂)) and a GPU's
# "(per GPU)", and a one-letter symbol's small formula (w − 1, K = V, m = 128; in Chinese's
# full-width brackets too, "（K = V）"), and in Chinese a count, its measure word and the Latin
# noun it counts ("20 个 GPU", "8 个 KV 头"): each is one word, never broken at the spaces inside it.
UNIT = r"(?:%|[KMGTP]i?B(?:/s)?|B|[kKMGTP]?FLOPs?(?:/(?:s|B|token))?|[KMGT]?params|ms|µs|ns|s|tokens?)"
_SHAPE = r"\((?:[\w·.+\-*/]+, ?)+[\w·.+\-*/]+\)"
_IDENTITY = r"(?<!\S)\(\S+\)\S* = \S*\(\S+\)\S*"
_SYMBOL_FORMULA = r"(?<![^\s(（])[A-Za-z] [−=+] [A-Za-z0-9]+(?![^\s),;）])"
_MEASURED = r"[\w/,.]*\d ?个 [A-Za-z][\w-]*"
# A count and the measure word after it ("62 层", "8 头"): Chinese breaks anywhere but there.
_COUNTED = r"(?:第 )?(?<![\w.,])\d[\d.,–]* [层个头次份组块条倍位维]"
UNBREAKABLE = re.compile(rf"[-+−]?\d[\d.,]* {UNIT}(?![\w/])|{_SHAPE}|{_IDENTITY}|\(per \w+\)|{_SYMBOL_FORMULA}|{_MEASURED}|{_COUNTED}")


def unbroken_words(line: str) -> list[str]:
    """`line`'s words, a number and its unit or a shape counted as one."""
    words, end = [], 0
    for match in UNBREAKABLE.finditer(line):
        # The whole of each word the span touches goes with it: "(-23.7" and "%)" join.
        start = line.rfind(" ", 0, match.start()) + 1 if match.start() > end else match.start()
        start = max(start, end)
        stop = line.find(" ", match.end())
        stop = len(line) if stop < 0 else stop
        words += line[end:start].split()
        words.append(line[start:stop])
        end = stop
    return words + line[end:].split()


def _longest_word(lines: Sequence[str], *, cjk_breaks: bool = True, folded: bool = False) -> int:
    """The widest word; with cjk_breaks, Chinese breaks between any two characters (a header
    does not: it wraps between its words only); `folded`, a name longer than FOLD_AT cells (a
    tensor's dotted path, `gate.moe_statics.e_score_correction_bias,`) counted as FOLD_AT wide:
    it may fold inside itself."""
    words = [word for line in lines for word in unbroken_words(line)]
    sizes = [cell_len(piece) for word in words for piece in (_pieces(word) if cjk_breaks else [word])]
    return max((min(size, FOLD_AT) if folded else size for size in sizes), default=0)


def _terms(line: str) -> list[str]:
    """A sum's terms as they can stand on a line: the first bare, the rest after `+ `."""
    first, *rest = line.split(TERM_JOIN)
    return [first, *("+ " + t for t in rest)]


def wrap_terms(text: str, width: int) -> str:
    """Each line of `text` broken before its ` + `s so that no line is wider than `width`
    (a term wider than that stands alone on its line, whole)."""
    out: list[str] = []
    for line in text.split("\n"):
        current = ""
        for term in _terms(line):
            joined = f"{current} {term}" if current else term
            if current and cell_len(joined) > width:
                out.append(current)
                current = term
            else:
                current = joined
        out.append(current)
    return "\n".join(out)


# Punctuation a Chinese line does not start with: it stays with the character before it.
_NO_LINE_START = "，。、；：？！）》」』】,.;:?!)"
# Nor ends with an opening one: it goes down with what it opens.
_NO_LINE_END = "（《「『【"


def _is_wide(ch: str) -> bool:
    return cell_len(ch) > 1


# The dot of a product written without spaces: a line too narrow for the product breaks after one.
_PRODUCT_DOT = "·"


def _after_dots(start: int, token: str, width: int) -> list[tuple[int, str]]:
    """(offset, piece): `token` cut after each product dot (4·seq·heads·head_dim) or a name's dot
    (gate.moe_statics.e_score_correction_bias), and a piece still wider than `width` after its
    underscores: where a column is narrower than the token, it breaks there rather than inside a word."""
    if cell_len(token) <= width:
        return [(start, token)]
    out: list[tuple[int, str]] = []
    for piece in re.findall(rf"[^{_PRODUCT_DOT}.]*[{_PRODUCT_DOT}.]|[^{_PRODUCT_DOT}.]+", token):
        parts = re.findall(r"[^_]*_|[^_]+", piece) if cell_len(piece) > width else [piece]
        for part in parts:
            out.append((start, part))
            start += len(part)
    return out


def _tokens(line: str, width: int | None = None) -> list[tuple[int, str]]:
    """(offset, token): runs of spaces, runs of narrow characters, and each wide character alone;
    a number with its unit, or a shape, is one token with the narrow runs it touches (where
    that fits in `width`)."""
    out: list[tuple[int, str]] = []
    for i, ch in enumerate(line):
        kind = "space" if ch.isspace() else "wide" if _is_wide(ch) else "narrow"
        prev = out[-1][1][-1] if out else ""
        prev_kind = "space" if prev.isspace() else "wide" if prev and _is_wide(prev) else "narrow"
        if out and kind == prev_kind and kind != "wide":
            out[-1] = (out[-1][0], out[-1][1] + ch)
        else:
            out.append((i, ch))
    if width is not None:  # a product too long for a line breaks after its dots, and only then
        out = [piece for start, token in out for piece in _after_dots(start, token, width)]
    for match in UNBREAKABLE.finditer(line):
        inside = [k for k, (start, token) in enumerate(out) if start < match.end() and start + len(token) > match.start()]
        first, last = inside[0], inside[-1]
        if width is not None and cell_len(line[out[first][0] : out[last][0] + len(out[last][1])]) > width:
            continue
        out[first : last + 1] = [(out[first][0], "".join(token for _start, token in out[first : last + 1]))]
    return out


# A number: 4.2, 7,658, 12%, a range (1–27), a shape's parts, (2, 5, 64), and one that ends a clause (64):, 3;).
_NUMBER = re.compile(r"[(\[]?[-+−]?\d[\d.,–]*[)\]%]*[,;:.]?")
_CLAUSE_END = (";", ":", ".", "；", "：", "。")
_GROUP_CELLS = 16  # the widest run of words kept together: `min 0, median 1`, `(2, 5, 64)`
_ARROWS = ("→", "←", "×")  # each stays with what it points at or multiplies


def _holds_on(token: str, after: str) -> bool:
    """A number keeps its unit (the word after it; an arrow after it goes with its right side)
    and the word that names it (`min 0`, `of 64`, unless a clause ends there), and an arrow
    what it points at."""
    if token in _ARROWS:
        return True
    if _NUMBER.fullmatch(token):
        return after not in _ARROWS and not token.endswith(_CLAUSE_END)
    return bool(_NUMBER.fullmatch(after)) and not token.endswith((",", "，", *_CLAUSE_END))


def _glued(tokens: list[tuple[int, str]], width: int) -> list[tuple[int, str]]:
    """`tokens` with each number joined to its unit and each arrow to its right side (across the
    space between), where the joined group stays short (a long chain would push whole lines
    down early): no line ends in `4.2` with `MFLOP` below, or in `→`."""
    cap = min(width, _GROUP_CELLS)
    out: list[tuple[int, str]] = []
    for start, token in tokens:
        if len(out) >= 2 and out[-1][1].isspace() and not token.isspace() and not _is_wide(token[0]):
            before = out[-2][1].rsplit(" ", 1)[-1]
            joined = out[-2][1] + out[-1][1] + token
            # A Chinese character before a number is the end of a word, not the word: it may break.
            if not _is_wide(before[-1]) and _holds_on(before, token.split(" ", 1)[0]) and cell_len(joined) <= cap:
                out[-2:] = [(out[-2][0], joined)]
                continue
        out.append((start, token))
    return out


def _breaks(line: str, width: int) -> list[int]:
    """Where a line (Chinese, with words and numbers between, or words alone) breaks to fit
    `width` cells: between any two wide characters or at a space, never inside a word or a
    number, never between a number and its unit or after an arrow, and never before a closing
    punctuation mark."""
    breaks: list[int] = []
    tokens = _glued(_tokens(line, width), width)
    used = 0
    for k, (start, token) in enumerate(tokens):
        size = cell_len(token)
        if token.isspace() or used == 0 or used + size <= width:
            used = 0 if (used == 0 and token.isspace()) else used + size
            continue
        # A closing mark goes down with the character (or word) before it, and that one with
        # the one before it if it is a mark too.
        j, last = k, breaks[-1] if breaks else 0
        while tokens[j][1][0] in _NO_LINE_START and j > 0 and not tokens[j - 1][1].isspace() and tokens[j - 1][0] > last:
            j -= 1
        while j > 0 and tokens[j - 1][1] in _NO_LINE_END and tokens[j - 1][0] > last:
            j -= 1  # an opening mark goes down with what it opens
        cut = tokens[j][0]
        breaks.append(cut)
        used = cell_len(line[cut : start + len(token)])
    return breaks


def wrap_wide(text: Text, width: int) -> Text:
    """`text` broken into lines of at most `width` cells: Chinese between characters, which rich
    would only break at spaces (a long run of it jumping whole to the next line), a number
    never from its unit; styles are kept. Text that fits is returned as it is."""
    if all(cell_len(line) <= width for line in text.plain.split("\n")):
        return text
    lines: list[Text] = []
    for line in text.split("\n"):
        for part in line.divide(_breaks(line.plain, width)):
            part.rstrip()
            lines.append(part)
    return Text("\n").join(lines)


@dataclass
class Wide:
    """A cell of words whose width is known only when it is drawn (a grid's second column):
    Chinese in it breaks between characters, as `wrap_wide` breaks it."""

    text: Text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        words = [piece for line in self.text.plain.split("\n") for word in unbroken_words(line) for piece in _pieces(word)]
        return Measurement(max((cell_len(w) for w in words), default=1), max(cell_len(line) for line in self.text.plain.split("\n")))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield wrap_wide(self.text, options.max_width)


def add_words(grid: Table, label: str, value: Cell) -> None:
    """A row of a two-column grid of totals: its label, and its words, Chinese breaking as `Wide`."""
    grid.add_row(label, Wide(_text(value)) if isinstance(value, str) else Wide(value))


def _empty(cell: Cell) -> bool:
    return _text(cell).plain.strip() in EMPTY_CELLS


def hidden_note(names: Sequence[str], width: int) -> str:
    """The footnote under a table that lost columns."""
    text = ngettext(
        "{count} column hidden at {width} columns ({names}): widen the terminal, or --json",
        "{count} columns hidden at {width} columns ({names}): widen the terminal, or --json",
        len(names),
    )
    return text.format(count=len(names), width=width, names=_(", ").join(names))


@dataclass
class FitTable:
    """A table that picks its columns and their widths for the width it is rendered at.

    rows: one list of cells per row, or None to draw a rule between sections.
    """

    title: Cell | None
    columns: Sequence[Col]
    rows: Sequence[Sequence[Cell] | None]
    caption: Cell | None = None
    show_header: bool = True
    _bounds: list[tuple[int, int, int]] = field(init=False, repr=False)
    _folded: list[int] = field(init=False, repr=False)
    _empty: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        bounds = [self._column_bounds(i) for i in range(len(self.columns))]
        self._bounds = [b[:3] for b in bounds]
        self._folded = [b[3] for b in bounds]  # the narrowest each column goes with its long words folded
        # A droppable column with nothing in it (every cell blank or `—`) goes before any other.
        rows = [row for row in self.rows if row is not None]
        self._empty = [i for i, c in enumerate(self.columns) if c.drop is not None and all(_empty(row[i]) for row in rows)]

    def _column_bounds(self, i: int) -> tuple[int, int, int, int]:
        """(narrowest without breaking a number or a word, narrowest comfortable, widest, narrowest
        with its long words folded: a text column's only)."""
        col = self.columns[i]
        body = [line for row in self.rows if row is not None for line in _lines(row[i])] + _lines(col.footer)
        header = col.header.split("\n") if self.show_header else []
        widest = max(_longest(body), _longest(header), 1)
        if col.kind == "text":
            unbroken = _longest_word(body)
        elif col.kind == "terms":
            unbroken = _longest([term for line in body for term in _terms(line)])
        else:
            unbroken = _longest(body)
        words = _longest_word(header, cjk_breaks=False)
        hard = max(unbroken, words, 1)
        soft = max(hard, min(col.floor, widest)) if col.kind in ("text", "terms") else hard
        folded = max(_longest_word(body, folded=True), words, 1) if col.kind == "text" else hard
        return hard, soft, widest, folded

    def layout(self, width: int) -> tuple[list[int], list[int]]:
        """(the indices of the columns shown, the width of each), for a console `width` wide."""
        return self._fit(width)

    def fits(self, width: int) -> bool:
        """Whether every column stays at this width (a column of nothing in it may still go) and
        the table is no wider than it."""
        shown, widths = self._fit(width)
        whole = sum(widths) + GAP * (len(shown) - 1) <= width
        return whole and all(i in shown or i in self._empty for i in range(len(self.columns)))

    def _fit(self, width: int) -> tuple[list[int], list[int]]:
        shown = list(range(len(self.columns)))

        def needed(bound: int) -> int:
            return sum(self._bounds[i][bound] for i in shown) + GAP * (len(shown) - 1)

        while needed(1) > width:
            droppable = [i for i in shown if self.columns[i].drop is not None]
            if not droppable:
                break
            empty = [i for i in droppable if i in self._empty]
            if empty:
                shown.remove(empty[-1])
                continue
            first = min(self.columns[i].drop or 0 for i in droppable)
            shown = [i for i in shown if self.columns[i].drop != first]
        widths = [self._bounds[i][0] for i in shown]
        if sum(widths) + GAP * (len(shown) - 1) > width:  # a long name would push a number off the screen: it folds
            widths = [self._folded[i] for i in shown]
        # Still too wide: the widest text column gives cells up, its long words breaking inside (a
        # product after its dots), so that the text is wrapped at the width it is drawn at, Chinese
        # by its own rules, rather than cut again by rich.
        over = sum(widths) + GAP * (len(shown) - 1) - width
        while over > 0:
            texts = [k for k, i in enumerate(shown) if self.columns[i].kind == "text" and widths[k] > _NARROWEST_TEXT]
            if not texts:
                break
            widths[max(texts, key=lambda k: widths[k])] -= 1
            over -= 1
        spare = width - sum(widths) - GAP * (len(shown) - 1)
        # Hand spare cells out one at a time: wrapped text up to a comfortable width first,
        # then wrapped headers of number columns (a few cells each), then the text to its widest.
        for bound, kinds in ((1, ("text", "terms")), (2, ("num", "fixed")), (2, ("text", "terms"))):
            grew = True
            while spare > 0 and grew:
                grew = False
                for k, i in enumerate(shown):
                    if spare and self.columns[i].kind in kinds and widths[k] < self._bounds[i][bound]:
                        widths[k] += 1
                        spare -= 1
                        grew = True
        return shown, widths

    def hidden(self, width: int) -> list[str]:
        """The headers of the columns that leave at this width."""
        return self._left_out(self.layout(width)[0])

    def _left_out(self, shown: Sequence[int]) -> list[str]:
        return [c.header.replace("\n", " ") for i, c in enumerate(self.columns) if i not in shown]

    @staticmethod
    def _cell(cell: Cell, col: Col, width: int) -> Text:
        text = _text(cell)
        if col.kind == "text":
            return wrap_wide(text, width)
        if col.kind != "terms":
            return text
        return Text(wrap_terms(text.plain, width), style=text.style)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        shown, widths = self.layout(width)
        table = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            collapse_padding=True,
            show_header=self.show_header,
            show_footer=any(_text(c.footer).plain for c in self.columns),
        )
        for i, w in zip(shown, widths, strict=True):
            col = self.columns[i]
            table.add_column(
                Text(col.header, no_wrap=False),  # a header may wrap between its words, a number never
                footer=_text(col.footer),
                justify="right" if col.kind == "num" else "left",
                width=w,
                no_wrap=col.kind != "text",  # "terms" cells come wrapped already
                overflow="fold",
                style=col.style,
            )
        for row in self.rows:
            if row is None:
                if table.rows:
                    table.rows[-1].end_section = True
            else:
                table.add_row(*[self._cell(row[i], self.columns[i], w) for i, w in zip(shown, widths, strict=True)])
        if self.title:
            yield wrap_wide(Text.assemble(_text(self.title), style="table.title"), width)
        yield table
        legends = [self.columns[i].legend for i in shown if self.columns[i].legend]
        caption = Text(" · ").join([_text(self.caption), *map(Text, legends)] if self.caption else list(map(Text, legends)))
        if caption.plain:
            yield wrap_wide(Text.assemble(caption, style="table.caption"), width)
        hidden = self._left_out(shown)
        if hidden:
            yield wrap_wide(Text(hidden_note(hidden, width), style="dim"), width)


@dataclass
class Layouts:
    """The same data laid out more than one way, widest first. At each width the first layout
    in which every table keeps all its columns is drawn; if none does, the last, whose tables
    then let columns go by their `drop`. The tables of one layout are drawn a blank line apart."""

    options: Sequence[Sequence[RenderableType]]

    def choose(self, width: int) -> Sequence[RenderableType]:
        for option in self.options[:-1]:
            if all(r.fits(width) for r in option if isinstance(r, FitTable)):
                return option
        return self.options[-1]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for k, renderable in enumerate(self.choose(options.max_width)):
            if k:
                yield Text("")
            yield renderable


@dataclass
class BarChart:
    """Horizontal bars sized to the width: label, value and bar per row; the bar gives way
    first (down to a short one), never the label or the value."""

    rows: Sequence[tuple[str, str, float]]  # (label, value text, fraction of the longest bar)
    max_cells: int = 48
    value_first: bool = False
    bar_style: str = "cyan"

    _EIGHTHS = " ▏▎▍▌▋▊▉"

    def _bar(self, fraction: float, cells: int) -> str:
        eighths = max(1 if fraction > 0 else 0, round(max(0.0, min(1.0, fraction)) * cells * 8))
        full, rest = divmod(eighths, 8)
        return "█" * full + (self._EIGHTHS[rest] if rest else "")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        label_w = _longest([r[0] for r in self.rows])
        value_w = _longest([r[1] for r in self.rows])
        cells = min(self.max_cells, options.max_width - label_w - value_w - 2)
        if cells < 8:  # too narrow for three columns: the label and value above each bar
            for label, value, fraction in self.rows:
                yield Text(f"{label}  {value}")
                yield Text(self._bar(fraction, min(self.max_cells, options.max_width)), style=self.bar_style)
            return
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        if self.value_first:
            grid.add_column(justify="right", no_wrap=True)
            grid.add_column(no_wrap=True, style=self.bar_style)
        else:
            grid.add_column(no_wrap=True, style=self.bar_style)
            grid.add_column(justify="right", no_wrap=True)
        for label, value, fraction in self.rows:
            bar = self._bar(fraction, cells)
            grid.add_row(label, value, bar) if self.value_first else grid.add_row(label, bar, value)
        yield grid
