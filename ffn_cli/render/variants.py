"""The `ffn variants` zoo as a table or as JSON."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ffn_cli.accounting import matmul_flops_formula, param_formula
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS

__all__ = ["variants_data", "variants_markdown", "variants_table"]

# The count columns may narrow to this (`E·(3·d·d_ff)`, the longest term, is 12 cells).
COUNT_FLOOR = 12


def variants_data() -> list[dict[str, Any]]:
    """One object per registry entry; formulas use the variant's default options."""
    rows = []
    for v in VARIANTS.values():
        spec = FFNSpec(variant=v.name, d_model=512)
        rows.append(
            {
                "name": v.name,
                "family": v.family,
                "activation": v.activation,
                "formula": v.formula,
                "param_formula": param_formula(spec),
                "matmul_flops_per_token": matmul_flops_formula(spec),
                "d_ff_rule": v.d_ff_rule,
                "default_bias": v.default_bias,
                "origin": v.origin,
                "summary": v.summary,
            }
        )
    return rows


def variants_table() -> FitTable:
    # The counts are what the table is for; the papers' titles are the first thing a narrow
    # terminal can do without. Counts are sums, broken only between their terms.
    columns = [
        Col("name", "fixed", style="bold"),
        Col("family", "fixed", drop=2),
        Col("formula", "text"),
        Col("params", "terms", drop=5, floor=COUNT_FLOOR),
        Col("matmul FLOPs/token", "terms", drop=4, floor=COUNT_FLOOR),
        Col("default d_ff", "text", drop=3, floor=COUNT_FLOOR),
        Col("origin", "text", drop=1),
    ]
    rows = []
    for row in variants_data():
        rule = VARIANTS[row["name"]].d_ff_rule_short
        cells = [row["name"], row["family"], row["formula"], row["param_formula"], row["matmul_flops_per_token"], rule, row["origin"]]
        rows.append([Text(str(c)) for c in cells])
    caption = "d = d_model; E experts, k of them per token; `ffn variants --json` and docs/variants.md have the full rules"
    return FitTable("FFN variants", columns, rows, caption=Text(caption))


def variants_markdown() -> str:
    """The registry as a Markdown table; docs/variants.md embeds exactly this text."""
    header = "| name | family | formula | parameters | matmul FLOPs / token | default d_ff | origin |"
    lines = [header, "|---|---|---|---|---|---|---|"]
    for row in variants_data():
        cells = [
            f"`{row['name']}`",
            row["family"],
            row["formula"],
            row["param_formula"],
            row["matmul_flops_per_token"],
            row["d_ff_rule"],
            row["origin"],
        ]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
