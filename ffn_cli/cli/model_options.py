"""The options that name a real model, shared by `params`, `trace` and `bench` (each request
reads the model they name: requests/, services/)."""

from __future__ import annotations

from typing import Annotated

import typer

from ffn_cli.cli.complete import complete_presets
from ffn_cli.cli.numbers import parse_int

__all__ = ["ConfigOpt", "LayerOpt", "ModelOpt", "PresetOpt", "RevisionOpt"]

_MODEL = "Real model"

PresetOpt = Annotated[
    str | None,
    typer.Option(
        "--preset",
        help="A well-known model shipped with ffn (see ffn params --list-presets).",
        rich_help_panel=_MODEL,
        autocompletion=complete_presets,
    ),
]
ConfigOpt = Annotated[
    str | None, typer.Option("--config", help="A Hugging Face config.json, or a model directory holding one.", rich_help_panel=_MODEL)
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="A Hugging Face model id, ORG/NAME: its config.json from the local cache, else the Hub (needs the hub extra).",
        rich_help_panel=_MODEL,
    ),
]
RevisionOpt = Annotated[str | None, typer.Option("--revision", help="Branch, tag or commit of --model.", rich_help_panel=_MODEL)]
LayerOpt = Annotated[
    int | None,
    typer.Option(
        "--layer", parser=parse_int, help="Which layer of the model (default: the first MoE layer, else 0).", rich_help_panel=_MODEL
    ),
]
