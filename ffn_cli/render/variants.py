"""The `ffn variants` zoo as a table or as JSON."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from ffn_cli.accounting import matmul_flops_formula, param_formula
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS

__all__ = ["variants_data", "variants_markdown", "variants_table"]


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


def variants_table() -> Table:
    table = Table(title="FFN variants", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("family", no_wrap=True)
    table.add_column("formula", overflow="fold", ratio=3)
    table.add_column("params", no_wrap=True)
    table.add_column("matmul FLOPs/token", no_wrap=True)
    table.add_column("default d_ff", no_wrap=True)
    table.add_column("origin", overflow="fold", ratio=2)
    for row in variants_data():
        rule = VARIANTS[row["name"]].d_ff_rule_short
        table.add_row(row["name"], row["family"], row["formula"], row["param_formula"], row["matmul_flops_per_token"], rule, row["origin"])
    table.caption = "d = d_model; E experts, k of them per token; `ffn variants --json` and docs/variants.md have the full rules"
    return table


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
