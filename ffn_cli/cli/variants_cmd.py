"""`ffn variants`: the zoo, from the registry."""

from __future__ import annotations

from ffn_cli.cli.common import console, emit_json, handles_errors
from ffn_cli.cli.options import JsonOpt
from ffn_cli.render.variants import variants_data, variants_table


@handles_errors
def variants(json: JsonOpt = False) -> None:
    """List every FFN variant with its formula, parameter and FLOP formulas and origin."""
    if json:
        emit_json(variants_data())
    else:
        console.print(variants_table())
