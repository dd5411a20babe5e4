"""The example outputs in README.md, README.zh-CN.md and docs/ (docs/zh/ too) are what the commands print today.

Every console block line `$ ffn …` in those files is run through the CLI, in a working folder
holding only the example configs of docs/examples, at the width the file's examples were
rendered at (80 columns for the Chinese pages), in English unless the command says `--lang zh`
(every example on a Chinese page does), and its output compared line by line; a line `…` in
the expected text stands for any number of lines (an excerpt). The free
memory that the preflight check reports is pinned to what the examples show. Timings
(`ffn bench`) and pipes are left out. The examples were rendered with the torch and rich that
CI installs: other releases draw other dropout masks, round a last digit elsewhere or pad a
column differently, so there the examples are skipped.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ffn_cli import device
from ffn_cli.cli import app
from ffn_cli.configs.fallback import EXTRA, transformers_available

ROOT = Path(__file__).parents[1]
# The Chinese pages: the README's translation and the learner's path under docs/zh/.
CHINESE = ["README.zh-CN.md", *sorted(f"docs/zh/{p.name}" for p in (ROOT / "docs" / "zh").glob("*.md"))]
# Console width each file's examples were rendered at: 100 columns or less, as a reader's terminal is;
# the Chinese pages at 80, the terminal a learner following the tutorials has.
COLUMNS = {
    "README.md": 100,
    "docs/params.md": 100,
    "docs/trace.md": 100,
    "docs/parallel.md": 100,
    "docs/own-module.md": 100,
    "docs/hardware.md": 80,
    **dict.fromkeys(CHINESE, 80),
}
DOCUMENTS = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")), *CHINESE]
FREE_MEMORY_SHOWN = int(22.17 * 2**30)  # docs/trace.md's refused trace: "the 22.17 GiB free on cpu"
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
    assert not in_block, f"{relative}: a code block is never closed"
    return found


def _runs_the_same(example: Example) -> bool:
    """Not a timing (`ffn bench`) and not a pipe: what it prints is the same on every run."""
    return "bench" not in shlex.split(example.command) and "|" not in example.command


def _runnable(example: Example) -> bool:
    # A prompt with no output under it yet is new: scripts/update_docs_examples.py fills it in.
    return bool(example.expected) and _runs_the_same(example)


EXAMPLES = [e for path in DOCUMENTS for e in _examples(path) if _runnable(e)]


# A number in e-notation is a rounding error (`outputs agree to 1.8e-07`): its last digits follow
# the CPU's BLAS kernels, so an example matches it by its form, not its digits.
ROUNDING_ERROR = re.compile(r"\d(?:\\\.\d+)?e\\-\d+")


def _line_pattern(line: str) -> str:
    return ROUNDING_ERROR.sub(lambda _: r"\d(?:\.\d+)?e-\d+", re.escape(line.rstrip())) + r"\n"


def _pattern(expected: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("".join(r"(?:[^\n]*\n)*?" if line.strip() == ELLIPSIS else _line_pattern(line) for line in expected))


def _stripped(text: str) -> str:
    return "".join(line.rstrip() + "\n" for line in text.strip("\n").splitlines())


def test_every_file_with_examples_has_a_width() -> None:
    assert {e.path for e in EXAMPLES} == set(COLUMNS)


def test_zh_pages_say_lang_zh() -> None:
    """The tests speak English (FFN_LANG=en): a Chinese page's example says `--lang zh` itself,
    as a reader whose locale is English types it."""
    english = [e.id for path in CHINESE for e in _examples(path) if e.command.split()[1:3] != ["--lang", "zh"]]
    assert CHINESE and not english, f"examples on Chinese pages without `ffn --lang zh …`: {english}"


def _other_releases() -> list[str]:
    return [f"{name} {version(name)}" for name, prefix in RENDERED_WITH.items() if not version(name).startswith(prefix)]


def run_example(example: Example, folder: Path) -> str:
    """What the example's command prints, run as the docs were rendered: at the file's width,
    with the free memory the docs show, in `folder` holding the example configs the docs name
    (docs/examples/<model>/config.json)."""
    shutil.copytree(ROOT / "docs" / "examples", folder, dirs_exist_ok=True)
    free, cwd = device.available_memory_bytes, Path.cwd()
    device.available_memory_bytes = lambda _device: FREE_MEMORY_SHOWN  # type: ignore[assignment]
    os.chdir(folder)
    try:
        # A cache of its own: an example that builds with transformers shows the build, never a read-back.
        # English unless the example asks otherwise, whatever the locale it is run in.
        env = {"XDG_CACHE_HOME": str(folder / ".cache"), "FFN_LANG": "en", "COLUMNS": str(COLUMNS[example.path])}
        result = CliRunner().invoke(app, shlex.split(example.command)[1:], env=env)
    finally:
        os.chdir(cwd)
        device.available_memory_bytes = free  # type: ignore[assignment]
    return _stripped(result.stdout + result.stderr)


@pytest.mark.skipif(bool(_other_releases()), reason=f"examples rendered with torch 2.13 and rich 15, not {', '.join(_other_releases())}")
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_example_output_is_current(example: Example, tmp_path: Path) -> None:
    actual = run_example(example, tmp_path)
    expected = _stripped("\n".join(example.expected))
    if EXTRA in actual and EXTRA not in expected and not transformers_available():
        pytest.skip(f"`{example.command}` builds its model with transformers, the optional extra: {EXTRA}")
    assert _pattern(tuple(expected.splitlines())).fullmatch(actual), (
        f"{example.id}: `{example.command}` at {COLUMNS[example.path]} columns prints\n{actual}\nbut the file shows\n{expected}"
    )
