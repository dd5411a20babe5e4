"""The yardstick for `ffn params`: a Typer + rich command of the same size doing the least.

    python benchmarks/typer_yardstick.py [--collector-as-ffn] --variant swiglu

A Typer app with one command of 40 typed options (strings, ints, floats, booleans, optional
values: the kinds `ffn params` declares), parsed from the command line, printing one rich
table of what it was given. What `ffn params` costs beyond this is the tool's own.
`--collector-as-ffn` (first, and only here) runs the cyclic collector as `ffn` runs its own
(`ffn_cli.cli.main`): what start-up imported frozen before the command runs, and the objects
still alive frozen at exit (`gc.freeze()`), so that Python's exit-time collections skip them.
"""

from __future__ import annotations

import gc
import sys

AS_FFN = sys.argv[1:2] == ["--collector-as-ffn"]
if AS_FFN:
    del sys.argv[1]

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

app = typer.Typer(add_completion=False)


@app.command()
def params(
    variant: str = typer.Option("relu", help="FFN variant"),
    d_model: int = typer.Option(512, help="model width"),
    d_ff: int = typer.Option(2048, help="hidden width"),
    bias: bool = typer.Option(True, help="biases"),
    dropout: float = typer.Option(0.0, help="dropout"),
    init: str = typer.Option("default", help="initialisation"),
    zero_init_output: bool = typer.Option(False, help="zero the output projection"),
    multiple_of: int = typer.Option(256, help="round d_ff up to this"),
    ffn_dim_multiplier: float | None = typer.Option(None, help="d_ff multiplier"),
    fused_gate_up: bool = typer.Option(False, help="one gate-up matrix"),
    experts: int = typer.Option(8, help="experts"),
    top_k: int = typer.Option(2, help="experts per token"),
    shared_experts: int = typer.Option(0, help="shared experts"),
    shared_d_ff: int | None = typer.Option(None, help="shared expert width"),
    shared_expert_gate: bool = typer.Option(False, help="gate the shared expert"),
    expert_variant: str = typer.Option("swiglu", help="expert variant"),
    capacity_factor: float | None = typer.Option(None, help="capacity factor"),
    router: str = typer.Option("softmax", help="router"),
    router_bias: bool = typer.Option(False, help="router bias"),
    norm_topk: bool = typer.Option(True, help="renormalise top-k"),
    aux_loss: float = typer.Option(0.0, help="aux loss weight"),
    z_loss: float = typer.Option(0.0, help="router z-loss weight"),
    jitter: float = typer.Option(0.0, help="router jitter"),
    groups: int = typer.Option(1, help="expert groups"),
    topk_groups: int = typer.Option(1, help="groups per token"),
    scale: float = typer.Option(1.0, help="routed scaling"),
    activation: str = typer.Option("relu", help="activation"),
    gate_activation: str = typer.Option("silu", help="gate activation"),
    layers: int = typer.Option(1, help="layers"),
    heads: int = typer.Option(8, help="attention heads"),
    kv_heads: int | None = typer.Option(None, help="key-value heads"),
    vocab: int | None = typer.Option(None, help="vocabulary"),
    dtype: str = typer.Option("float32", help="dtype"),
    device: str = typer.Option("cpu", help="device"),
    batch: int = typer.Option(2, help="batch"),
    seq_len: int = typer.Option(5, help="sequence length"),
    seed: int = typer.Option(0, help="seed"),
    preset: str | None = typer.Option(None, help="preset"),
    json_out: bool = typer.Option(False, "--json", help="JSON"),
    lang: str = typer.Option("en", help="language"),
) -> None:
    """Print one table of the options given."""
    table = Table("option", "value", title="params")
    for name, value in locals().items():
        if name != "table":
            table.add_row(name, str(value))
    Console().print(table)


if __name__ == "__main__":
    if AS_FFN:
        gc.freeze()  # what start-up imported
        try:
            app()
        finally:
            gc.freeze()  # what is still alive at exit
    else:
        app()
