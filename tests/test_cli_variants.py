from __future__ import annotations

import json
import re
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


def _markdown_rows(text: str) -> list[dict[str, str]]:
    lines = [line.strip() for line in text.strip().splitlines()]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert set(lines[1].replace("|", "")) == {"-"}
    return [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True)) for line in lines[2:]]


def _evaluate(formula: str, **sizes: int) -> int:
    """'2·d·d_ff + d_ff + d' at the given sizes; only names, numbers, +, · and brackets."""
    assert re.fullmatch(r"[\w·+() ]+", formula), formula
    return int(eval(formula.replace("·", "*"), {"__builtins__": {}}, sizes))  # names, numbers, + and · only: checked above


def test_markdown_table_rows_are_what_the_built_modules_hold_and_run(runner: CliRunner) -> None:
    """Each row of `ffn variants --markdown`, read back from the text: its parameter formula is
    the built module's parameter count and its FLOP formula what FlopCounterMode counts."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from ffn_cli import build_ffn
    from ffn_cli.spec import FFNSpec

    result = runner.invoke(app, ["variants", "--markdown"])
    assert result.exit_code == 0
    rows = _markdown_rows(result.stdout)
    assert [row["name"] for row in rows] == [f"`{name}`" for name in VARIANTS]
    sizes = {"d": 16, "d_ff": 24, "E": 4, "k": 2}
    for row in rows:
        spec = FFNSpec(variant=row["name"].strip("`"), d_model=16, d_ff=24, experts=4, top_k=2)
        module = build_ffn(spec).eval()
        assert _evaluate(row["parameters"], **sizes) == sum(p.numel() for p in module.parameters()), row["name"]
        x = torch.randn(2, 3, 16, generator=torch.Generator().manual_seed(0))
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            module(x)
        assert _evaluate(row["matmul FLOPs / token"], **sizes) * 6 == counter.get_total_flops(), row["name"]
