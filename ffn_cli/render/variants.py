"""The `ffn variants` zoo as a table or as JSON."""

from __future__ import annotations

from typing import Any

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
    table = Table(title="FFN variants", show_lines=False, expand=False)
    for header in ("name", "family", "formula", "params", "matmul FLOPs/token", "default d_ff", "origin"):
        table.add_column(header, overflow="fold")
    for row in variants_data():
        table.add_row(
            f"[bold]{row['name']}[/]",
            row["family"],
            row["formula"],
            row["param_formula"],
            row["matmul_flops_per_token"],
            row["d_ff_rule"],
            row["origin"],
        )
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
