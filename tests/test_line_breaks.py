"""Where the tool's lines break, in English and Chinese, at every width from 60 to 100 columns:
never between a number and its unit (`217.61` / `GiB`), never inside a shape (`(B·T,` / `d)`),
never inside a word of the examples under bare `ffn`."""

from __future__ import annotations

import io
import itertools
import re

import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from ffn_cli import set_language
from ffn_cli.cli import app
from ffn_cli.render.bench import bench_view

COMMANDS = [
    ["params", "--preset", "llama-2-7b", "--gpu", "h100"],
    ["params", "--preset", "llama-2-7b", "--gpu", "h100", "--phase", "decode"],
    ["params", "--preset", "mixtral-8x7b", "--gpu", "h100"],
    ["params", "-v", "relu,swiglu,moe", "--match-params"],
    ["hardware"],
    ["trace", "--block", "--device", "meta"],
    ["trace", "--backward", "--device", "meta"],
    ["trace", "-v", "moe", "--device", "meta"],
]
WIDTHS = range(60, 101, 5)

# Units as the tables print them, written out here rather than taken from the renderer.
UNIT = re.compile(r"(?:%|[KMGTP]iB|B|GB/s|TB/s|[kMGTP]?FLOPs?(?:/s|/B)?|ms|µs|s|tokens?)(?![\w/])")
# A number ending a column's text: 217.61, 4,096, (−23.7.
NUMBER_END = re.compile(r"\d[\d.,]*\d$|\d$")
# A shape left open at a line's end: "(B·T," or "(128,256," (its items are dimensions: numbers
# or short symbols such as B, T, H·d_h).
OPEN_SHAPE = re.compile(r"\((?:(?:\d[\d,]*|[A-Za-z]\w{0,3}(?:·\w{1,3})*), ?)+$")


def _cells(line: str) -> list[str]:
    """The line as terminal cells: a wide character fills its cell and the next one ('')."""
    out: list[str] = []
    for ch in line:
        out += [ch, ""] if cell_len(ch) == 2 else [ch]
    return out


def _segments(cells: list[str]) -> list[tuple[int, str]]:
    """(first cell, text) of each run of text that two spaces or more set apart: a column's cell."""
    text = "".join(ch if ch else "\0" for ch in cells)
    return [(m.start(), m.group().replace("\0", "")) for m in re.finditer(r"\S+(?: \S+)*", text)]


def breaks_inside(output: str) -> list[str]:
    """Each place where a column's text ends a line with a number and goes on with its unit on
    the next, or ends a line inside a shape."""
    lines = [_cells(line.rstrip()) for line in output.split("\n")]
    found = []
    for above, below in itertools.pairwise(lines):
        for start, text in _segments(above):
            rest = "".join(below[start:])
            continued = below[start - 1 : start] in ([" "], []) and rest[:1] not in ("", " ")
            unit = UNIT.match(rest)
            # A unit, not a row's label such as "FLOPs   41,989,120" that happens to start there.
            if continued and NUMBER_END.search(text) and unit and not rest[unit.end() :].startswith("  "):
                found.append(f"{text[-20:]!r} / {rest[:20]!r}")
            tail = text[text.rfind("(") :] if "(" in text else ""
            if continued and tail and ")" not in tail and OPEN_SHAPE.search(tail):
                found.append(f"{text[-20:]!r} / {rest[:20]!r}")
    return found


def test_the_finder_sees_a_unit_and_a_shape_left_behind() -> None:
    table = "weights        12.55 GiB  float32 25.10 GiB · bfloat16 12.55\n                          GiB · float8 6.28 GiB\n"
    assert len(breaks_inside(table)) == 1
    assert len(breaks_inside(" 1  flatten  tokens: (B, T, d) → (B·T,\n             d)\n")) == 1
    assert len(breaks_inside("token embeddings  (128,256,\n                  4,096)\n")) == 1
    assert breaks_inside("memory  12.55 GiB\nFLOPs   41,989,120\n") == []  # a row's label, not a unit left behind


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_no_number_leaves_its_unit_and_no_shape_breaks(args: list[str], lang: str) -> None:
    runner = CliRunner()
    for width in WIDTHS:
        result = runner.invoke(app, ["--lang", lang, *args], env={"COLUMNS": str(width)})
        assert result.exit_code == 0, result.output
        assert breaks_inside(result.stdout) == [], f"at {width} columns"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bare_ffn_breaks_no_word_of_its_examples(lang: str) -> None:
    runner = CliRunner()
    for width in WIDTHS:
        out = runner.invoke(app, ["--lang", lang], env={"COLUMNS": str(width)}).stdout
        examples = out[out.rindex("\n\n") :]
        assert all(cell_len(line) <= width for line in examples.split("\n")), f"at {width} columns"
        words = {w for line in examples.split("\n") for w in line.split()}
        for expected in ("step", "side", "parameters", "origin", "shell") if lang == "en" else ("FFN", "FLOPs", "shell"):
            assert expected in words or any(w.startswith(expected) or w.endswith(expected) for w in words), f"{expected} at {width}"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_bench_environment_line_keeps_each_size_with_its_unit(lang: str) -> None:
    from tests.test_cli_bench import _fake_report

    set_language(lang)
    try:
        for width in WIDTHS:
            console = Console(width=width, file=io.StringIO(), color_system=None)
            console.print(bench_view(_fake_report()))
            assert breaks_inside(console.file.getvalue()) == [], f"at {width} columns"  # type: ignore[attr-defined]
    finally:
        set_language("en")


def test_chinese_prose_under_a_table_fills_its_lines() -> None:
    # The side-by-side legend in Chinese breaks between characters, never a whole run of them
    # jumping to the next line and leaving the one above half empty.
    out = CliRunner().invoke(app, ["--lang", "zh", "params", "--preset", "qwen3-8b,llama-3-8b"], env={"COLUMNS": "80"}).stdout
    lines = out.split("\n")
    first = next(i for i, line in enumerate(lines) if line.startswith("FFN %："))
    paragraph = []
    for line in lines[first:]:
        if not line.strip():
            break
        paragraph.append(line.rstrip())
    assert len(paragraph) >= 2
    assert all(80 - 4 <= cell_len(line) <= 80 for line in paragraph[:-1]), paragraph
