"""Every table in tests/golden with a `total` row adds up, as torchinfo checks its summary:
the rendered text is parsed back, each right-aligned number column summed over its rows and
compared with the printed total; a part's `each × count` is its params. A second path to the
totals, by plain arithmetic on what a reader sees, independent of the code that printed them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.cells import cell_len

GOLDEN = Path(__file__).parent / "golden"
# An integer with thousands separators, standing alone (not part of a shape, a word, a decimal).
NUMBER = re.compile(r"(?<![\w.,(·×/])(\d{1,3}(?:,\d{3})*)(?![\w.,%)·×/])")


def _tables(text: str) -> list[tuple[str, list[str], str]]:
    """(header, row lines, total lines) of each table whose rule is followed, later, by a total;
    a total of two lines (the backward's `dW …` over `dx …`) is one, its lines joined."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if i == 0 or not line.strip() or set(line.strip()) != {"─"}:
            continue
        for j in range(i + 1, len(lines)):
            if set(lines[j].strip()) == {"─"}:
                break  # the next table began first: this one has no total
            if lines[j].split()[:1] in (["total"], ["总计"]):  # in Chinese the row is 总计
                more = [t for t in lines[j + 1 : j + 3] if t.strip() and t.startswith(" " * 8) and t.split()[0] in _LABELS]
                found.append((lines[i - 1], lines[i + 1 : j], "\n".join([lines[j], *more])))
                break
    return found


def _cell_end(line: str, m: re.Match[str]) -> int:
    """Where a number ends on screen: Chinese characters before it are two cells wide."""
    return cell_len(line[: m.end()])


# The backward's FLOPs cell holds three sums in one column, each line labelled: dW, dx, ew.
_LABELS = ("dW", "dx", "ew")


def _label(line: str, m: re.Match[str]) -> str:
    before = line[: m.start()].split()
    return before[-1] if before and before[-1] in _LABELS else ""


def _numbers_ending_at(line: str, end: int, label: str = "") -> list[int]:
    return [
        int(m.group(1).replace(",", ""))
        for m in NUMBER.finditer(line)
        if _cell_end(line, m) == end
        and not line[: m.start()].rstrip().endswith("active")  # a MoE part's active count
        and (not label or _label(line, m) == label)
    ]


def _checked_columns(name: str, text: str | None = None) -> int:
    """Check every table of a golden file (or of `text`, as that file would read); the number
    of columns checked."""
    checked = 0
    text = (GOLDEN / name).read_text(encoding="utf-8") if text is None else text
    for header, rows, total in _tables(text):
        for line, m in ((t, m) for t in total.split("\n") for m in NUMBER.finditer(t)):
            column = [n for row in rows for n in _numbers_ending_at(row, _cell_end(line, m), _label(line, m))]
            assert column, (name, header, m.group(1))
            assert sum(column) == int(m.group(1).replace(",", "")), (name, header.split(), m.group(1), column)
            checked += 1
        if header.split()[:3] == ["part", "each", "×"]:  # a model's parts: each × count = params
            for row in rows:
                cells = row.split()
                numbers = [c for c in cells if re.fullmatch(r"\d{1,3}(,\d{3})*", c)]
                if len(numbers) == 3 and cells[-1].endswith("%"):
                    each, count, params = (int(c.replace(",", "")) for c in numbers)
                    assert each * count == params, (name, row)
    return checked


GOLDENS = sorted(p.name for p in GOLDEN.glob("*.txt"))


@pytest.mark.parametrize("name", GOLDENS)
def test_every_total_is_the_sum_of_its_column(name: str) -> None:
    _checked_columns(name)


@pytest.mark.parametrize(
    ("prefix", "columns"),
    [
        ("params_relu_512", 1),
        ("params_mixtral_8x7b", 1),
        ("trace_default", 2),
        ("trace_default_zh", 2),
        ("trace_backward_zh", 4),  # the forward's params and FLOPs, the backward's dW and dx
        ("trace_swiglu_meta", 1),
        ("trace_moe_meta", 2),
    ],
)
def test_the_tables_with_totals_are_found(prefix: str, columns: int) -> None:
    # The check above must see the tables: params (and FLOPs) columns at both widths.
    for width in (80, 120):
        assert _checked_columns(f"{prefix}_{width}.txt") >= columns


def test_a_wrong_total_is_caught() -> None:
    """The very check above, on a golden with one total off by one."""
    name = "params_relu_512_120.txt"
    text = (GOLDEN / name).read_text(encoding="utf-8")
    assert _checked_columns(name, text) >= 1
    wrong = text.replace("2,099,712   100%", "2,099,713   100%")
    assert wrong != text
    with pytest.raises(AssertionError):
        _checked_columns(name, wrong)
