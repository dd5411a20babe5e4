"""A number is printed whole or not at all, at any width from 60 columns up.

Each command runs once; what it printed is rendered again at 60, 80, 100 and 120 columns,
and every table it holds is checked as it came out: each number in a shown number or name
column parses to a value in the same command's `--json` (to the digits printed) and its lines
stand whole in the output; each word of a wrapped note is printed unbroken; no line is wider
than the terminal, nothing ends in `…`, and the footnote names exactly the columns left out.
"""

from __future__ import annotations

import io
import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from typer.testing import CliRunner

from ffn_cli.cli import app, common
from ffn_cli.i18n import _ as translate
from ffn_cli.i18n import set_language
from ffn_cli.render.fit import FOLD_AT, GAP, TERM_JOIN, Col, FitTable, hidden_note, wrap_terms, wrap_wide
from ffn_cli.render.format import TIE_TOLERANCE

WIDTHS = (60, 80, 100, 120)

COMMANDS = [
    "trace",
    "trace --block",
    "trace --ops",
    "trace --variant moe --shared-experts 1 --values 4",
    "trace --variant swiglu -d 4096 --device meta -b 8 -s 4096",
    "params",
    "params -v swiglu -d 4096",
    "params --variant relu,gelu,swiglu,moe --match-params",
    "params --variant moe -d 4096 --experts 64",
    "params --preset mixtral-8x7b",
    "params --preset deepseek-moe-16b",
    # A tensor's dotted path beside the experts (Ernie's e_score_correction_bias) and an active count under them.
    "params --preset ernie-4.5-21b-a3b",
    "params --list-presets",
    "params --variant swiglu --tp 4",
    "params --variant moe --ep 4",
    "variants",
    "hardware",
    "params --preset gpt-oss-120b",
    "params --preset llama-3.1-70b --gpu h100 --phase decode --batch 1,8,64,512",
    "params --preset gpt-oss-120b --gpu h200 --phase decode --batch 1,64 --ep 8",
    "params --preset llama-3.1-70b --gpu h100 --tp 8 --phase decode --batch 1,64",
    "params --preset deepseek-v3 --gpu h100 --tp 16 --ep 16 --phase decode --batch 64",
    # A hybrid: its mixer column over the length, and what decoding keeps by layer kind.
    "params --preset qwen3-next-80b-a3b -s 4096,131072",
    "params --preset granite-4.0-h-tiny --gpu h100 --phase decode --seq-len 32768 --batch 1,8",
    # (--ep 2: test_a_parallel_trace_keeps_every_ranks_shapes_at_60_and_80_columns, in both languages)
    # The backward's four tables, of a block whose names are long (MLA) and of a checkpointed FFN.
    "trace --preset deepseek-v2-lite --block --layer 0 --d-ff 64 -s 3 --backward",
    "trace --variant swiglu --backward --checkpoint",
    # A real MoE model: 256 experts, most folded into one row, the rest with their weights.
    "trace --preset deepseek-v3 --device meta",
]

# A number, with the unit or scale that follows it: 1,050,624 · 4.00 MiB · 1,017.29 MiB · 12.9 GFLOP · 3.2× · 49.8 %
_NUMBER = re.compile(
    r"(?<![\w.·])([-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
    r"(?:\s?(KiB|MiB|GiB|TiB|[kMGTP])(?:FLOP)?\b)?(?!\w|\.\d)"
)
_BINARY = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_SI = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
# A cropped thousands group (`1,050,6`) or a cell cut short.
# A "…" that starts a line is the row number of elided or idle experts, not a cropped cell.
_CROPPED = re.compile(r"\d,\d{1,2}(?!\d)|\d{4},\d|(?<!^)(?<!^ )…(?!  )", re.MULTILINE)


def _leaves(data: Any) -> Iterator[float]:
    if isinstance(data, bool):
        return
    if isinstance(data, (int, float)):
        yield float(data)
    elif isinstance(data, dict):
        for v in data.values():
            yield from _leaves(v)
    elif isinstance(data, (list, tuple)):
        for v in data:
            yield from _leaves(v)
    elif isinstance(data, str):  # a count inside a label or a formula is data too
        for m in _NUMBER.finditer(data):
            yield _parse(m)[0]


def _parse(match: re.Match[str]) -> tuple[float, float]:
    """(value, the half-unit of its last printed digit, scaled)."""
    digits, unit = match.group(1), match.group(2)
    scale = _BINARY.get(unit or "", 0) or _SI.get(unit or "", 1.0)
    plain = digits.replace(",", "")
    decimals = len(plain.split(".")[1].split("e")[0]) if "." in plain else 0
    exponent = int(plain.split("e")[1]) if "e" in plain else 0
    # Three significant digits (fmt_si) round more coarsely than the decimals show.
    half = 0.5 * 10.0 ** (exponent - decimals) * scale
    return float(plain) * scale, half


def _matches(value: float, half: float, known: list[float]) -> bool:
    for j in known:
        for candidate in (j, 100 * j):  # a share printed in percent
            # A near-tie is rounded as the tie (render/format.py): up to TIE_TOLERANCE past the half.
            if abs(candidate - value) <= max(half * 1.0001 + TIE_TOLERANCE * abs(value), 1e-12 * abs(value)):
                return True
    return False


class _Recorder:
    """Wraps FitTable.layout to note each table as it is drawn, with the columns it showed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.drawn: list[tuple[FitTable, int, list[int]]] = []
        layout = FitTable.layout

        def recording(table: FitTable, width: int) -> tuple[list[int], list[int]]:
            shown, widths = layout(table, width)
            self.drawn.append((table, width, shown))
            return shown, widths

        monkeypatch.setattr(FitTable, "layout", recording)


def _printed(args: list[str], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What the command handed to console.print, to be drawn again at each width."""
    printed: list[Any] = []
    monkeypatch.setattr(common.console, "print", lambda *objects, **_: printed.extend(objects))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    monkeypatch.undo()
    return printed


def _draw(renderables: list[Any], width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, emoji=False)
    for r in renderables:
        console.print(r)
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> Iterator[None]:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_number_is_whole_at_every_width(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _check_command(command, monkeypatch)


# In Chinese the words are other and twice as wide, the numbers and shapes the same.
ZH_COMMANDS = [c for c in COMMANDS if c.startswith("trace")]
ZH_COMMANDS += ["trace --explain", "trace --variant moe --experts 4 --explain", "trace --variant swiglu --backward --checkpoint --explain"]
ZH_COMMANDS += [
    "params",
    "params -v swiglu -d 4096",
    "params --variant relu,gelu,swiglu,moe --match-params",
    "params --variant moe -d 4096 --experts 64 --shared-experts 1 --explain",
    "params --preset llama-3.1-8b --explain",
    "params --preset deepseek-v3 --gpu h100 --weights fp8",
    "params --preset mixtral-8x7b,llama-3-8b -s 4096,32768",
    "params --preset gemma-2-9b -s 4096,131072",
    "params --preset qwen3-next-80b-a3b -s 4096,131072",
    "params --preset gemma-3-27b --gpu h100 --phase decode --seq-len 32768",
    "params --preset qwen3-235b-a22b --weights fp8 --gpu h200 --tp 8 --ep 8 --phase decode --batch 64",
    "params --list-presets",
    "variants",
    "hardware",
]


@pytest.mark.parametrize("command", ZH_COMMANDS)
def test_every_number_is_whole_at_every_width_in_chinese(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    english = json.loads(CliRunner().invoke(app, [*command.split(), "--json"]).stdout)
    chinese = json.loads(CliRunner().invoke(app, ["--lang", "zh", *command.split(), "--json"]).stdout)
    assert chinese == english, f"{command}: --json differs between the languages"
    _check_command(command, monkeypatch, lang="zh", data=english)


def _check_command(command: str, monkeypatch: pytest.MonkeyPatch, lang: str = "en", data: Any = None, renderables: Any = None) -> None:
    """The command's tables at every width hold each number its --json holds (`data` and the
    printed `renderables`, when the caller has them already: a parallel trace starts ranks)."""
    args = command.split()
    if data is None:
        data = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    known = sorted(set(_leaves(data)))
    if renderables is None:
        renderables = _printed(["--lang", lang, *args], monkeypatch)
    set_language(lang)  # the footnotes are worded as they are drawn
    for width in WIDTHS:
        recorder = _Recorder(monkeypatch)
        text = _draw(renderables, width)
        monkeypatch.undo()
        assert recorder.drawn, f"{command}: no table drawn"
        assert not _CROPPED.search(text), f"{command} at {width}: a cropped number or …\n{text}"
        assert all(len(line) <= width for line in text.splitlines()), f"{command} at {width}: a line is wider than the terminal"
        for table, w, shown in recorder.drawn:
            _check_table(command, table, w, shown, text, known)
        if args[0] == "trace" and "steps" in data and "--ops" not in args and width in NARROW:
            _check_steps_shown(f"{command} at {width}", data, recorder.drawn)


# The widths at which a trace must still show each step's shapes and the shapes of its weights.
NARROW = (60, 80)


def _shape(shape: list[int]) -> str:
    """A shape as the tutorials write it: (2, 5, 512), (2048,)."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _check_steps_shown(where: str, data: dict[str, Any], drawn: list[tuple[FitTable, int, list[int]]]) -> None:
    """Every step the --json lists has a row, among the tables drawn, whose shown cells hold its
    input and output shapes and the shape of each weight it reads; only the experts the tables
    fold into one `…` row are absent, as many as the --json says were folded."""
    shown_cells: dict[str, list[str]] = {}
    for table, _, shown in drawn:
        headers = [c.header for c in table.columns]
        if translate("step") not in headers:
            continue
        name = headers.index(translate("step"))
        for row in table.rows:
            if row is not None and name in shown:
                shown_cells.setdefault(_plain(row[name]), []).extend(_plain(row[i]) for i in shown)
    absent = []
    for step in data["steps"]:
        cells = shown_cells.get(step["name"])
        if cells is None:
            absent.append(step["name"])
            continue
        printed = "\n".join(cells)
        inputs = list(dict.fromkeys(map(tuple, step["input_shapes"])))
        outputs = list(dict.fromkeys(map(tuple, step["output_shapes"] if len(step["output_shapes"]) > 1 else [step["output_shape"]])))
        # A cell lists three distinct shapes, then `+N more`.
        wanted = [_shape(list(x)) for x in inputs[:3]] + ["→ " + _shape(list(x)) for x in outputs[:3]]
        wanted += [_shape(p["shape"]) for p in step["params"]]
        missing = [w for w in wanted if w not in printed]
        assert not missing, f"{where}: {step['name']} shows no {missing}"
    folded = (data.get("expert_summary") or {}).get("elided", 0)
    assert len(absent) == folded, f"{where}: no row for {absent}"


def _check_table(command: str, table: FitTable, width: int, shown: list[int], text: str, known: list[float]) -> None:
    lines = text.splitlines()
    words = set(text.split())
    for row in table.rows:
        if row is None:
            continue
        for i in shown:
            cell = row[i] if isinstance(row[i], Text) else Text.from_markup(str(row[i]))
            kind = table.columns[i].kind
            if table.columns[i].header == "#":  # row numbers count rows, they are not data
                continue
            if kind == "text":  # prose: wrapped between words, never inside one (Chinese between any two characters)
                # … but a word longer than FOLD_AT (a tensor's path) folds where the columns that never leave need the room.
                missing = [w for w in cell.plain.split() if w not in words and not _whole_between_characters(w, lines)
                           and not (cell_len(w) > FOLD_AT and table.layout(width)[1][shown.index(i)] < cell_len(w))]  # fmt: skip
                assert not missing, f"{command} at {width}: {missing} broken in a wrapped cell"
                continue
            # A sum is wrapped between its terms: each term is checked as a line of its own.
            pieces = [t for line in cell.plain.split("\n") for t in line.split(TERM_JOIN)] if kind == "terms" else cell.plain.split("\n")
            for cell_line in pieces:
                if cell_line.strip():
                    assert any(cell_line in line for line in lines), f"{command} at {width}: {cell_line!r} is not printed whole"
                for m in _NUMBER.finditer(cell_line):
                    value, half = _parse(m)
                    assert _matches(value, half, known), f"{command} at {width}: {m.group(0)!r} is not a value in --json"
    hidden = [table.columns[i].header.replace("\n", " ") for i in range(len(table.columns)) if i not in shown]
    if hidden:
        # Chinese wraps between any two characters: the footnote is looked for with its line breaks taken out.
        assert "".join(hidden_note(hidden, width).split()) in "".join(text.split()), f"{command} at {width}: no footnote for {hidden}"
    _check_order(f"{command} at {width}", table, shown)


def _whole_between_characters(word: str, lines: list[str]) -> bool:
    """A word with Chinese in it may break at any of its wide characters, never inside a run of
    narrow ones (a number, a name)."""
    pieces, run = [], ""
    for ch in word:
        if cell_len(ch) > 1:
            pieces, run = [*pieces, run], ""
        else:
            run += ch
    pieces = [p for p in [*pieces, run] if p]
    return len(pieces) < len(word) and all(any(p in line for line in lines) for p in pieces)


def _plain(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain


def _check_order(where: str, table: FitTable, shown: list[int]) -> None:
    """A column with nothing in it (all blank or `—`) leaves before one that holds something;
    columns that share a `drop` are shown or hidden together."""
    droppable = [i for i, c in enumerate(table.columns) if c.drop is not None]
    rows = [row for row in table.rows if row is not None]

    def empty(i: int) -> bool:
        return all(_plain(row[i]).strip() in ("", "—") for row in rows)

    gone = [i for i in droppable if i not in shown]
    if any(not empty(i) for i in gone):
        kept_empty = [table.columns[i].header for i in droppable if i in shown and empty(i)]
        assert not kept_empty, f"{where}: {kept_empty} hold nothing yet stayed while a column with data left"
    for i in droppable:
        partners = [k for k in droppable if table.columns[k].drop == table.columns[i].drop]
        assert len({k in shown for k in partners}) == 1, f"{where}: {[table.columns[k].header for k in partners]} split"


# --- the fitting rule on its own --------------------------------------------------------------

_word = st.text(alphabet="abcdefgh", min_size=1, max_size=12)
_number = st.integers(min_value=0, max_value=10**12).map(lambda n: f"{n:,}")


@given(
    names=st.lists(_word, min_size=1, max_size=8),
    numbers=st.lists(st.lists(_number, min_size=4, max_size=4), min_size=1, max_size=6),
    notes=st.lists(st.lists(_word, max_size=10).map(" ".join), min_size=6, max_size=6),
    width=st.integers(min_value=60, max_value=160),
)
def test_fitted_table_keeps_numbers_whole(names: list[str], numbers: list[list[str]], notes: list[str], width: int) -> None:
    columns = [Col("name", "fixed"), Col("a"), Col("b", drop=2), Col("c", drop=1), Col("d", drop=3), Col("notes", "text", drop=4)]
    rows = [[names[k % len(names)], *nums, notes[k]] for k, nums in enumerate(numbers)]
    table = FitTable("title", columns, rows)
    text = _draw([table], width)
    shown, _ = table.layout(width)
    assert all(len(line) <= width for line in text.splitlines())
    for row in rows:
        for i in shown[1:]:
            if table.columns[i].kind == "num":
                assert row[i] in text
    hidden = table.hidden(width)
    assert (hidden_note(hidden, width) in " ".join(text.split())) if hidden else "hidden at" not in text
    # Columns leave in their stated order (a column with nothing in it before any): a column
    # shown means every column that leaves after it is shown.
    empty = [k for k, c in enumerate(columns) if c.drop is not None and all(not row[k].strip() for row in rows)]
    ranked = sorted((c.drop, k) for k, c in enumerate(columns) if c.drop is not None and k not in empty)
    order = [*reversed(empty), *(k for _, k in ranked)]
    gone = [k for k in range(len(columns)) if k not in shown]
    assert sorted(gone, key=order.index) == order[: len(gone)]


def _table(columns: list[Col], rows: list[list[str]]) -> FitTable:
    return FitTable(None, columns, [[Text(c) for c in row] for row in rows])


def test_columns_that_share_a_drop_leave_together() -> None:
    """min and max are read as a pair: the width that has no room for both shows neither."""
    columns = [Col("step", "fixed"), Col("mean"), Col("min", drop=1), Col("max", drop=1), Col("std", drop=2)]
    table = _table(columns, [["activation", "0.2304", "-0.1700", "4.2050", "0.5803"]])
    # Widths 10 + 6 + 7 + 6 + 6 and four gaps of 2: 43 with every column, 26 without min and max.
    assert table.hidden(43) == []
    assert table.hidden(42) == ["min", "max"]
    assert table.hidden(26) == ["min", "max"] and table.hidden(25) == ["min", "max", "std"]


def test_a_column_with_nothing_in_it_leaves_first() -> None:
    """A column of `—` (no peak known on this device) goes before any that holds a number."""
    columns = [Col("case", "fixed"), Col("ms"), Col("n", drop=1), Col("% peak", drop=5), Col("bound", "fixed", drop=6)]
    table = _table(columns, [["relu", "0.61", "3", "—", "—"], ["swiglu", "0.72", "3", "", "—"]])
    # Widths 6 + 4 + 1 + 4 (`% peak` wraps its header) + 5 and four gaps: 28; without bound 21,
    # then without % peak 15, then without n 12.
    assert table.hidden(28) == []
    assert table.hidden(27) == ["bound"] and table.hidden(21) == ["bound"]
    assert table.hidden(20) == ["% peak", "bound"] and table.hidden(15) == ["% peak", "bound"]
    assert table.hidden(14) == ["n", "% peak", "bound"]


def test_a_sum_wraps_only_between_its_terms() -> None:
    assert wrap_terms("2·d·d_ff + d_ff + d", 19) == "2·d·d_ff + d_ff + d"
    assert wrap_terms("2·d·d_ff + d_ff + d", 15) == "2·d·d_ff + d_ff\n+ d"
    assert wrap_terms("2·d·d_ff + d_ff + d", 8) == "2·d·d_ff\n+ d_ff\n+ d"
    assert wrap_terms("E·d + E·(3·d·d_ff)", 4) == "E·d\n+ E·(3·d·d_ff)"  # a term wider than the column stands whole
    table = _table([Col("name", "fixed"), Col("params", "terms", floor=8)], [["relu", "2·d·d_ff + d_ff + d"]])
    # The narrowest the column goes is its widest term with its `+ `: `+ d_ff`, 6; the floor asks for 8.
    assert table._bounds[1] == (8, 8, 19)
    assert [line.rstrip() for line in _draw([table], 14).splitlines()[2:]] == ["relu  2·d·d_ff", "      + d_ff", "      + d"]
    assert [line.rstrip() for line in _draw([table], 21).splitlines()[2:]] == ["relu  2·d·d_ff + d_ff", "      + d"]


def test_a_text_column_narrows_to_its_own_floor() -> None:
    columns = [Col("name", "fixed"), Col("rule", "text", drop=1, floor=6), Col("origin", "text", drop=2)]
    table = _table(columns, [["glu", "⅔·4d ↑ multiple_of", "Shazeer 2020, GLU Variants Improve Transformer"]])
    assert table._bounds[1][:2] == (11, 11)  # its longest word, `multiple_of`, above the floor of 6
    assert table._bounds[2][:2] == (11, 16)  # the default floor, 16


def test_a_long_name_folds_and_the_numbers_stay_whole() -> None:
    """A tensor's dotted path (53 cells) in a part's name column: at 60 columns the share (%)
    leaves first, as any column that may; the counts, which never leave, still do not fit beside
    the whole name, so it folds inside itself and they stay whole (they were cut to `38,603,5`)."""
    name = "token embeddings\nroberta_prelayernorm.embeddings.token_type_embeddings"
    columns = [Col("part", "text"), Col("each"), Col("×"), Col("params"), Col("%", drop=1)]
    table = _table(columns, [[name, "38,603,520", "1", "38,603,520", "31.0%"]])
    assert table._folded[0] == 24
    text = _draw([table], 60)
    assert text.count("38,603,520") == 2 and all(cell_len(line) <= 60 for line in text.splitlines())
    assert table.hidden(60) == ["%"] and table.hidden(100) == [] and "31.0%" in _draw([table], 100)


def test_notes_wrap_at_word_boundaries() -> None:
    table = FitTable(None, [Col("step", "fixed"), Col("mean"), Col("notes", "text")], [["activation", "0.2304", "negatives 10,193 → 0"]])
    text = _draw([table], 60)
    assert "10,193" in text and "negatives" in text


BENCH = [
    "bench --variant relu,swiglu -d 16,32 -s 4 --repeats 3 --warmup-ms 1 --impl eager,fused",
    "bench --variant swiglu -d 16 -s 4 --repeats 3 --warmup-ms 1 --backward --checkpoint",
]


@pytest.mark.parametrize("command", BENCH)
def test_bench_numbers_are_whole_at_every_width(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Timings differ run to run, so the JSON compared is that of the report the tables drew."""
    from ffn_cli.render import bench as render_bench
    from ffn_cli.render.presenters import bench as bench_presenter

    reports: list[Any] = []
    view = render_bench.bench_view
    monkeypatch.setattr(bench_presenter, "bench_view", lambda report: reports.append(report) or view(report))
    renderables = _printed(command.split(), monkeypatch)
    known = sorted(set(_leaves(json.loads(json.dumps(render_bench.bench_json(reports[0]), default=list)))))
    for width in WIDTHS:
        recorder = _Recorder(monkeypatch)
        text = _draw(renderables, width)
        monkeypatch.undo()
        assert not _CROPPED.search(text), f"{command} at {width}: a cropped number or …\n{text}"
        assert all(len(line) <= width for line in text.splitlines())
        for table, w, shown in recorder.drawn:
            _check_table(command, table, w, shown, text, known)


def test_a_cell_never_turns_an_emoji_code_into_an_emoji() -> None:
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(FitTable(Text("t"), [Col("name", "fixed"), Col("n")], [["gpt:fire:2", "1"]]))
    assert "gpt:fire:2" in console.file.getvalue()  # type: ignore[attr-defined]


# --- which columns a reader keeps ------------------------------------------------------------


def _layouts(command: str, width: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[list[str], list[str]]]:
    """Each table the command draws at `width`, by title: (headers shown, headers hidden)."""
    renderables = _printed(command.split(), monkeypatch)
    recorder = _Recorder(monkeypatch)
    _draw(renderables, width)
    monkeypatch.undo()
    out = {}
    for table, _, shown in recorder.drawn:
        title = table.title.plain if isinstance(table.title, Text) else str(table.title)
        headers = [c.header for c in table.columns]
        out[title] = ([headers[i] for i in shown], [h for i, h in enumerate(headers) if i not in shown])
    return out


@pytest.mark.parametrize(
    "command", ["trace --preset qwen3-8b --block --device meta", "trace --preset deepseek-v2-lite --block --layer 0 --device meta"]
)
def test_a_block_keeps_its_operation_and_weights_at_80_columns(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The operation is the only text that says what `attn.kv_a_proj_with_mqa` does, the weight
    shapes are what the tutorials print: at 80 columns both stay, in a table of their own
    beside the shape flow, which keeps every column it has."""
    tables = _layouts(command, 80, monkeypatch)
    shown, hidden = tables["Shape flow, step by step"]
    assert {"step", "input → output", "params", "FLOPs"} <= set(shown) and not hidden
    assert tables["What each step computes, and its weights"] == (["#", "step", "operation", "weight shapes"], [])


def test_the_wide_trace_is_one_table(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _layouts("trace", 80, monkeypatch)["Weights each step uses"] == (["#", "step", "weight shapes"], [])
    tables = _layouts("trace", 100, monkeypatch)
    assert tables["Shape flow, step by step"] == (["#", "step", "operation", "input → output", "weight shapes", "params", "FLOPs"], [])
    assert "Weights each step uses" not in tables


def test_the_values_keep_negatives_at_60_columns_and_the_notes_leave_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """How many values a ReLU turns to zero is what the values table is for; the notes move
    below it before any statistic leaves."""
    tables = _layouts("trace", 60, monkeypatch)
    shown, hidden = tables["Values at each step (computed on the device)"]
    assert {"step", "mean", "min", "max", "zeros %", "negatives"} <= set(shown) and "notes" not in shown
    assert hidden == ["std"]
    assert tables["Notes on the values"] == (["step", "notes"], [])


def test_the_values_at_80_columns_keep_every_statistic_and_move_the_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    tables = _layouts("trace", 80, monkeypatch)
    assert tables["Values at each step (computed on the device)"] == (["step", "mean", "std", "min", "max", "zeros %", "negatives"], [])
    assert tables["Notes on the values"] == (["step", "notes"], [])


@pytest.mark.parametrize("width", [60, 80])
def test_variants_at_narrow_widths_keep_the_counts_and_the_papers(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = _layouts("variants", width, monkeypatch)
    counts, _ = tables["FFN variants: what each costs"]
    assert {"name", "params", "matmul FLOPs/token", "default d_ff"} <= set(counts)
    assert tables["FFN variants: what each computes, and where it comes from"] == (["name", "formula", "origin"], [])


@pytest.mark.parametrize("width", [60, 80])
def test_the_backward_at_narrow_widths_keeps_names_shapes_and_flops(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = _layouts("trace --preset deepseek-v2-lite --block --layer 0 --d-ff 64 -s 3 --backward", width, monkeypatch)
    steps = tables["Backward, step by step, as autograd ran it (dL/dy: seeded normal)"][0]
    assert {"backward of", "gradient in → out", "FLOPs"} <= set(steps)
    assert {"backward of", "weight gradients"} <= set(tables["Weight gradients each backward step makes"][0])
    assert {"parameter", "shape", "norm"} <= set(tables["Parameter gradients"][0])


# --- Chinese in a wrapped column -----------------------------------------------------------------

_CHINESE = "正则化，p = 0：评估模式下是恒等映射；训练模式下每个值以概率 p 置零，其余乘以 1/(1−p)，期望值保持不变（d_ff 2,048）。"


@pytest.mark.parametrize("width", range(16, 61, 3))
def test_chinese_breaks_between_characters_never_inside_a_number_nor_before_a_mark(width: int) -> None:
    from rich.cells import cell_len

    from ffn_cli.render.fit import wrap_wide

    lines = wrap_wide(Text(_CHINESE), width).plain.split("\n")
    assert all(cell_len(line) <= width for line in lines), lines
    assert "".join(lines).replace(" ", "") == _CHINESE.replace(" ", "")  # nothing lost, nothing added
    assert not [line for line in lines if line[:1] in "，。；：）" or line.rstrip()[-1:] == "（"], lines
    for run in ("1/(1−p)", "2,048", "d_ff"):
        assert any(run in line for line in lines), (run, lines)
    assert wrap_wide(Text("plain English words"), 5).plain == "plain\nEnglish\nwords"  # at spaces, as rich does
    assert wrap_wide(Text("plain English words"), 19).plain == "plain English words"  # it fits: as it is


@pytest.mark.parametrize("width", range(8, 41))
def test_a_number_keeps_its_unit_and_an_arrow_what_it_points_at(width: int) -> None:
    from rich.cells import cell_len

    from ffn_cli.render.fit import wrap_wide

    text = "FLOPs 41,989,120 = 41,943,040 matmul + 46,080 elementwise; 4.2 MFLOP per token; negatives 7,658 → 0"
    lines = wrap_wide(Text(text), width).plain.split("\n")
    assert " ".join(lines) == text and all(cell_len(line) <= width or " " not in line for line in lines), lines
    for pair in ("4.2 MFLOP", "→ 0"):
        if cell_len(pair) <= width:
            assert any(pair in line for line in lines), (pair, lines)
    assert not [line for line in lines if line.endswith(("→", "7,658 →"))], lines


@pytest.mark.parametrize("width", range(18, 41))
def test_an_identity_and_a_per_gpu_stay_whole(width: int) -> None:
    """`(xW₁)W₂ = x(W₁W₂)` and `(per GPU)` are never split at their spaces where they fit."""
    from ffn_cli.render.fit import wrap_wide

    for text, whole in (
        ("the linear layers would collapse into one, (xW₁)W₂ = x(W₁W₂), and learn nothing more", "(xW₁)W₂ = x(W₁W₂)"),
        ("NVIDIA GB300 (per GPU) driver: 284,208 MiB", "(per GPU)"),
    ):
        lines = wrap_wide(Text(text), width).plain.split("\n")
        assert " ".join(lines) == text and any(whole in line for line in lines), lines


@pytest.mark.parametrize("width", range(12, 30))
def test_a_symbol_formula_in_full_width_brackets_stays_whole(width: int) -> None:
    """Chinese brackets a formula in full-width marks: "（K = V）" breaks before it, never inside."""
    from ffn_cli.render.fit import wrap_wide

    lines = wrap_wide(Text("127 个 token × 512（K = V）"), width).plain.split("\n")
    assert any("（K = V）" in line for line in lines), lines


@pytest.mark.parametrize("width", range(14, 40))
def test_a_chinese_count_stays_with_the_latin_noun_it_counts(width: int) -> None:
    """ "64 个 GPU", "8 个 KV 头": the count, its measure word and the noun after it break as one word."""
    from ffn_cli.render.fit import wrap_wide

    text = "共 16 个 GPU，是所试布局（每份至多 64 个 GPU：1、2、4 或 8 的倍数）中最少的"
    lines = wrap_wide(Text(text), width).plain.split("\n")
    assert all(not line.rstrip().endswith("个") and not line.startswith("GPU") for line in lines), lines
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")


@pytest.mark.parametrize("width", range(12, 40))
def test_a_chinese_count_stays_with_its_measure_word(width: int) -> None:
    """ "62 层", "（第 3–60 层）": a line never ends in a count whose measure word opens the next."""
    from ffn_cli.render.fit import wrap_wide

    text = "路由专家从 256 个中取 top-4，权重 × 2.5（第 3–60 层）；模型也包含 3 个稠密 FFN 层，共 62 层，是注意力的 1.12 倍"
    lines = wrap_wide(Text(text), width).plain.split("\n")
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    broken = [(a, b) for a, b in itertools.pairwise(lines) if re.search(r"\d$", a.rstrip()) and b[0] in "个层倍"]
    assert not broken and any("第 3–60 层" in line for line in lines), lines


def test_a_table_too_wide_for_its_words_narrows_its_text_and_wraps_it_at_that_width() -> None:
    # A value 26 cells wide and a formula of 20 leave no room at 60 columns: the text column gives
    # up cells, its Chinese wrapped at the width drawn (no line opens with "；"), the formula broken
    # after a dot, every line within the width.
    note = "激活路径上的矩阵乘；注意力分数每层另加 4·seq·heads·head_dim"
    rows = [["前向 FLOPs/token", "124.50×（激活参数 2.611×）", note]]
    table = FitTable(None, [Col("what", "text"), Col("value"), Col("how", "text")], rows, show_header=False)
    shown, widths = table.layout(60)
    assert shown == [0, 1, 2] and sum(widths) + GAP * 2 <= 60
    lines = _draw([table], 60).split("\n")
    assert all(cell_len(line) <= 60 for line in lines)
    assert not any(re.search(r"\s；", line) for line in lines), lines


def test_a_chinese_note_breaks_between_characters_and_a_header_does_not() -> None:
    # A run of CJK characters has no spaces: it wraps between any two (as rich draws it), so a
    # long Chinese note narrows to fit instead of pushing a column out; a header stays whole.
    note = "激活路径上的矩阵乘；注意力分数每层另加" * 3
    table = FitTable(None, [Col("名称", "fixed"), Col("数值"), Col("说明", "text", drop=1)], [["前向 FLOPs/token", "15 GFLOP", note]])
    shown, widths = table.layout(60)
    assert shown == [0, 1, 2] and sum(widths) + GAP * 2 <= 60
    text = _draw([table], 60)
    assert all(cell_len(line) <= 60 for line in text.splitlines()) and "".join(text.split()).count(note) == 1
    header = FitTable(None, [Col("模型", "fixed"), Col("FFN/注意力")], [["llama-3-8b", "4.20×"]])
    assert header.layout(80)[1][1] == cell_len("FFN/注意力")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_parallel_trace_keeps_every_ranks_shapes_at_60_and_80_columns(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rank table's input and output, and each rank's shape flow, move to tables of their own
    where they do not fit beside the counts; they never leave."""
    command = ["trace", "--variant", "moe", "--ep", "2", "-d", "64", "--d-ff", "128", "--experts", "4"]
    data = json.loads(CliRunner().invoke(app, [*command, "--json"]).stdout)
    if lang != "en":
        assert json.loads(CliRunner().invoke(app, ["--lang", lang, *command, "--json"]).stdout) == data
    renderables = _printed(["--lang", lang, *command], monkeypatch)
    _check_command(" ".join(command), monkeypatch, lang=lang, data=data, renderables=renderables)  # every number whole, every width
    set_language(lang)
    for width in (60, 80):
        text = _draw(renderables, width)
        assert all(cell_len(line) <= width for line in text.splitlines())
        for rank in data["ranks"]:
            rows = [line for line in text.splitlines() if line.strip().startswith(str(rank["rank"]) + " ")]
            assert any(_shape(rank["input_shape"]) in row and rank["device"] in row for row in rows), (width, rank["rank"], text)
            flow = text.split(translate("shape flow, rank {rank}").format(rank=rank["rank"]))
            section = flow[1].split("\n\n")[0] if len(flow) > 1 else text
            for step in rank["steps"]:
                assert "→ " + _shape(step["output_shape"]) in section, (width, rank["rank"], step["name"])


def test_a_columns_legend_is_said_while_the_column_is_shown() -> None:
    table = FitTable(
        "t",
        [Col("name", "fixed"), Col("kept", legend="kept: stays"), Col("wide", drop=1, legend="wide: leaves first")],
        [["a", "1", "x" * 30], ["b", "2", "y" * 30]],
        caption="caption",
    )

    def shown(width: int) -> str:
        console = Console(width=width, file=io.StringIO(), record=True)
        console.print(table)
        return console.export_text()

    assert "caption · kept: stays · wide: leaves first" in shown(80)
    narrow = shown(20)
    assert "wide" not in narrow.split("hidden")[0] and "kept: stays" in narrow.replace("\n", " ")


@pytest.mark.parametrize("width", [8, 12, 16, 40])
def test_a_product_narrower_than_its_line_breaks_only_after_a_dot(width: int) -> None:
    # 4·seq·heads·head_dim is 20 cells: where the line is narrower it folds after its dots, each
    # name whole; where the line holds it, it stays one word (moved whole to the next line).
    text = "注意力分数每层另加 4·seq·heads·head_dim"
    lines = wrap_wide(Text(text), width).plain.split("\n")
    pieces = [p for line in lines for p in line.split(" ") if p and all(ord(c) < 0x2E80 for c in p)]  # the narrow words
    assert "".join(pieces) == "4·seq·heads·head_dim"
    if width >= 20:
        assert pieces == ["4·seq·heads·head_dim"]
    else:
        assert len(pieces) > 1 and all(p.endswith("·") for p in pieces[:-1]), lines  # each break after a dot


@pytest.mark.parametrize("width", [12, 20, 36])
def test_a_name_wider_than_its_line_breaks_after_a_dot_then_an_underscore(width: int) -> None:
    # A tensor's path (40 cells) in a column narrower than it: broken after its dots, and a piece
    # still too wide after its underscores, never inside a word (rich would fold it anywhere).
    name = "gate.moe_statics.e_score_correction_bias"
    lines = wrap_wide(Text(f"+ {name}"), width).plain.split("\n")
    assert "".join(lines) == f"+ {name}" and all(len(line) <= width for line in lines)
    assert all(line.endswith((".", "_")) for line in lines[:-1]), lines
    if width > len("e_score_correction_bias"):  # each dotted piece fits: the breaks are at the dots alone
        assert all(line.endswith(".") for line in lines[:-1]), lines
