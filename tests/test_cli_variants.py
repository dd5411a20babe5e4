from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.render.variants import variants_markdown
from ffn_cli.variants import VARIANTS

DOCS = Path(__file__).parent.parent / "docs" / "variants.md"


def test_variants_lists_every_registry_entry(runner: CliRunner) -> None:
    result = runner.invoke(app, ["variants"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for name in VARIANTS:
        assert name in result.output


def test_variants_json_has_one_object_per_variant(runner: CliRunner) -> None:
    result = runner.invoke(app, ["variants", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == list(VARIANTS)
    assert {"family", "formula", "param_formula", "origin"} <= set(rows[0])


def test_docs_table_is_the_registry() -> None:
    text = DOCS.read_text(encoding="utf-8")
    begin, end = "<!-- variants-table:begin -->\n", "<!-- variants-table:end -->"
    embedded = text[text.index(begin) + len(begin) : text.index(end)]
    assert embedded == variants_markdown(), "docs/variants.md is stale: paste `ffn variants --markdown` between the markers"


def test_markdown_option_prints_the_docs_table(runner: CliRunner) -> None:
    result = runner.invoke(app, ["variants", "--markdown"])
    assert result.exit_code == 0
    assert result.stdout == variants_markdown()
