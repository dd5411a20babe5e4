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


def main() -> None:
    by_file: dict[str, list] = {}
    for example in EXAMPLES:
        by_file.setdefault(example.path, []).append(example)
    for path, examples in by_file.items():
        lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
        for example in sorted(examples, key=lambda e: e.line, reverse=True):
            if any(line.strip() == ELLIPSIS for line in example.expected):
                print(f"{example.id}: elided by hand, left alone")
                continue
            start = example.line  # the line after the prompt (1-based prompt line)
            with tempfile.TemporaryDirectory() as folder:
                lines[start : start + len(example.expected)] = run_example(example, Path(folder)).rstrip("\n").splitlines()
        (ROOT / path).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
