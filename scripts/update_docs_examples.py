"""Rewrite the output of every `$ ffn …` example in README.md, README.zh-CN.md and docs/ with
what the command prints now, at the width tests/test_docs_examples.py renders that file at.

A prompt written with no output under it is a new example: its output is filled in. Examples
that elide lines with `…` in the middle are left alone (reported), since their elisions are by
hand. Timings (`ffn bench`) and pipes are never run.

Run: python scripts/update_docs_examples.py              (every file with examples)
     python scripts/update_docs_examples.py FILE [FILE …] (those files only, e.g. docs/zh/trace.md)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_docs_examples import DOCUMENTS, ELLIPSIS, _examples, _runs_the_same, run_example  # noqa: E402


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


def _chosen(arguments: list[str]) -> list[str]:
    """The files named (relative to the checkout, as DOCUMENTS lists them), or every one."""
    if not arguments:
        return DOCUMENTS
    chosen = []
    for argument in arguments:
        path = Path(argument).resolve()
        relative = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else argument
        if relative not in DOCUMENTS:
            sys.exit(f"error: {argument}: not a page tests/test_docs_examples.py reads; it reads {', '.join(DOCUMENTS)}")
        chosen.append(relative)
    return chosen


def main(arguments: list[str]) -> None:
    for path in _chosen(arguments):
        examples = [e for e in _examples(path) if _runs_the_same(e)]
        if not examples:
            continue
        lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
        for example in sorted(examples, key=lambda e: e.line, reverse=True):
            start = example.line  # the line after the prompt (1-based prompt line)
            with tempfile.TemporaryDirectory() as folder:
                actual = run_example(example, Path(folder)).rstrip("\n").splitlines()
            new = _fill(example.expected, actual)
            if new is None:
                print(f"{example.id}: elided by hand, left alone")
                continue
            if not example.expected:
                print(f"{example.id}: new, filled in")
            lines[start : start + len(example.expected)] = new
        (ROOT / path).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
