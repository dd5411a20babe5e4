"""The example outputs in README.md and docs/ are what the commands print today.

Every console block line `$ ffn …` in those files is run through the CLI at the width the
file's examples were rendered at, and its output compared line by line. In the expected text
a line `…` stands for any number of lines (an excerpt) and `…` inside a line for any text
(a machine's free memory). Timings (`ffn bench`), pipes and files the repository does not
hold are left out. The examples were rendered with the torch and rich that CI installs: other
releases draw other dropout masks, round a last digit elsewhere or pad a column differently,
so there the examples are skipped.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app, common

ROOT = Path(__file__).parents[1]
# Console width each file's examples were rendered at: wide enough that its tables do not wrap.
COLUMNS = {"README.md": 100, "docs/params.md": 100, "docs/trace.md": 120, "docs/parallel.md": 128}
ELLIPSIS = "…"
RENDERED_WITH = {"torch": "2.13.", "rich": "15."}  # version prefixes


@dataclass(frozen=True)
class Example:
    path: str
    line: int
    command: str
    expected: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def _examples(relative: str) -> list[Example]:
    """The `$ ffn …` commands of the file's code blocks, each with the lines up to the next prompt or the block's end."""
    found: list[Example] = []
    current: tuple[int, str, list[str]] | None = None
    in_block = False

    def close() -> None:
        if current is not None:
            found.append(Example(relative, current[0], current[1], tuple(current[2])))

    for number, line in enumerate((ROOT / relative).read_text(encoding="utf-8").splitlines(), start=1):
        if line.startswith("```"):
            if in_block:
                close()
                current = None
            in_block = not in_block
        elif in_block and line.startswith("$ "):
            close()
            current = (number, line[2:], []) if line.startswith("$ ffn ") else None
        elif in_block and current is not None:
            current[2].append(line)
    return found


def _runnable(example: Example) -> bool:
    words = shlex.split(example.command)
    needs_file = "--config" in words and not (ROOT / words[words.index("--config") + 1]).exists()
    return bool(example.expected) and "bench" not in words and "|" not in example.command and not needs_file


EXAMPLES = [e for path in COLUMNS for e in _examples(path) if _runnable(e)]


def _pattern(expected: tuple[str, ...]) -> re.Pattern[str]:
    parts = []
    for line in expected:
        if line.strip() == ELLIPSIS:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(re.escape(piece) for piece in line.rstrip().split(ELLIPSIS)) + r"\n")
    return re.compile("".join(parts))


def _stripped(text: str) -> str:
    return "".join(line.rstrip() + "\n" for line in text.strip("\n").splitlines())


def test_every_file_has_examples() -> None:
    assert {e.path for e in EXAMPLES} == set(COLUMNS)


def _other_releases() -> list[str]:
    return [f"{name} {version(name)}" for name, prefix in RENDERED_WITH.items() if not version(name).startswith(prefix)]


@pytest.mark.skipif(bool(_other_releases()), reason=f"examples rendered with torch 2.13 and rich 15, not {', '.join(_other_releases())}")
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_example_output_is_current(example: Example, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common.console, "width", COLUMNS[example.path])
    result = CliRunner().invoke(app, shlex.split(example.command)[1:])
    actual = _stripped(result.stdout + result.stderr)
    expected = _stripped("\n".join(example.expected))
    assert _pattern(tuple(expected.splitlines())).fullmatch(actual), (
        f"{example.id}: `{example.command}` at {COLUMNS[example.path]} columns prints\n{actual}\nbut the file shows\n{expected}"
    )
