"""Rewrite the output of every `$ ffn …` example in README.md and docs/ with what the command
prints now, at the width tests/test_docs_examples.py renders that file at.

Examples that elide lines with `…` are left alone (reported), since their elisions are by hand.
Run: python scripts/update_docs_examples.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_docs_examples import ELLIPSIS, EXAMPLES, run_example  # noqa: E402


def _fill(expected: tuple[str, ...], actual: list[str]) -> list[str] | None:
    """The new example text: the whole output, or, for an example that elides its head with a
    leading `…`, `…` and the whole output from the line the example resumes at (later
    elisions are filled in); None otherwise."""
    elisions = [i for i, line in enumerate(expected) if line.strip() == ELLIPSIS]
    if not elisions:
        return actual
    if elisions[0] != 0 or len(expected) < 2:
        return None  # elided in the middle only: by hand
    anchor = expected[1].rstrip()
    starts = [i for i, line in enumerate(actual) if line.rstrip() == anchor]
    if not starts:  # the resuming line rewrapped at another width: match its first words
        head = " ".join(anchor.split()[:2])
        starts = [i for i, line in enumerate(actual) if head and " ".join(line.split()[:2]) == head]
    return [ELLIPSIS, *actual[starts[0] :]] if starts else None


def main() -> None:
    by_file: dict[str, list] = {}
    for example in EXAMPLES:
        by_file.setdefault(example.path, []).append(example)
    for path, examples in by_file.items():
        lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
        for example in sorted(examples, key=lambda e: e.line, reverse=True):
            start = example.line  # the line after the prompt (1-based prompt line)
            with tempfile.TemporaryDirectory() as folder:
                actual = run_example(example, Path(folder)).rstrip("\n").splitlines()
            new = _fill(example.expected, actual)
            if new is None:
                print(f"{example.id}: elided by hand, left alone")
                continue
            lines[start : start + len(example.expected)] = new
        (ROOT / path).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
