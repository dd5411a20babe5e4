"""`ffn variants`: the zoo, from the registry."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ffn_cli.cli.common import console, emit_json, handles_errors
from ffn_cli.cli.options import JsonOpt

EXAMPLES = """[bold]Examples[/]

  ffn variants             every variant, its formula and origin
  ffn variants --markdown  the same table as Markdown
  ffn variants --json      as JSON"""


@handles_errors
def variants(
    json: JsonOpt = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the table as Markdown (as in docs/variants.md).")] = False,
) -> None:
    """List every FFN variant with its formula, parameter and FLOP formulas and origin."""
    from ffn_cli.render.variants import variants_data, variants_markdown, variants_table

    if json:
        emit_json(variants_data())
    elif markdown:
        sys.stdout.write(variants_markdown())
    else:
        console.print(variants_table())
