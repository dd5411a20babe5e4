"""The `ffn variants` zoo as a table or as JSON."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ffn_cli.accounting import matmul_flops_formula, param_formula
from ffn_cli.i18n import N_, _
from ffn_cli.render.fit import Col, FitTable, Layouts
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS

__all__ = ["variants_data", "variants_markdown", "variants_table"]

# Each family's name as the table says it (the JSON keeps the registry's word).
FAMILY_WORDS = {"dense": N_("dense"), "gated": N_("gated"), "moe": N_("moe"), "sparse": N_("sparse")}

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


def variants_table() -> Layouts:
    """Wide: one row per variant. Narrower: the counts in one table, the formula and the paper
    it comes from in a second, so that no column is left out. Counts are sums, broken only
    between their terms; the formulas and origins wrap between words."""
    columns = [
        Col(_("name"), "fixed", style="bold"),
        Col(_("family"), "fixed", drop=2),
        Col(_("formula"), "text"),
        Col(_("params"), "terms", drop=5, floor=COUNT_FLOOR),
        Col(_("matmul FLOPs/token"), "terms", drop=4, floor=COUNT_FLOOR),
        Col(_("default d_ff"), "text", drop=3, floor=COUNT_FLOOR),
        Col(_("origin"), "text", drop=1),
    ]
    rows = []
    for row in variants_data():
        rule = _(VARIANTS[row["name"]].d_ff_rule_short)
        family, formula = _(FAMILY_WORDS[row["family"]]), _(row["formula"])  # a formula with words in it is in the catalog
        cells = [row["name"], family, formula, row["param_formula"], row["matmul_flops_per_token"], rule, _(row["origin"])]
        rows.append([Text(str(c)) for c in cells])
    caption = Text(_("d = d_model; E experts, k of them per token; `ffn variants --json` and docs/variants.md have the full rules"))

    def pick(title: str, keep: list[int], **options: Any) -> FitTable:
        return FitTable(title, [columns[i] for i in keep], [[row[i] for i in keep] for row in rows], **options)

    wide = FitTable(_("FFN variants"), columns, rows, caption=caption)
    counts = pick(_("FFN variants: what each costs"), [0, 1, 3, 4, 5], caption=caption)
    words = pick(_("FFN variants: what each computes, and where it comes from"), [0, 2, 6])
    return Layouts([[wide], [counts, words]])


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
