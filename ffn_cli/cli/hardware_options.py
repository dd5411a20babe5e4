"""Options for what a model costs on real hardware: --gpu (a row of ffn_cli/hardware's table),
and turning their text into table rows, with did-you-mean on a wrong name."""

from __future__ import annotations

from typing import Annotated

import typer

from ffn_cli.errors import FFNError
from ffn_cli.hardware import GPU, UnknownGPU, find_gpu, gpu_keys

__all__ = ["GPUOpt", "resolve_gpu"]

_HARDWARE = "Hardware"

GPUOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu",
        help="A GPU of `ffn hardware` (h100, h200, b200, mi300x, …): its dense peak and bandwidth.",
        rich_help_panel=_HARDWARE,
        show_default=False,
    ),
]


def resolve_gpu(name: str) -> GPU:
    """The table's row for --gpu NAME, or a usage error naming the closest keys."""
    try:
        return find_gpu(name)
    except UnknownGPU as unknown:
        hint = f"did you mean {' or '.join(unknown.suggestions)}? " if unknown.suggestions else ""
        raise FFNError("gpu", name, f"{hint}known: {', '.join(gpu_keys())} (ffn hardware lists them)") from None
