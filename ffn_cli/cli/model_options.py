"""The options that name a real model, shared by `params`, `trace` and `bench`, and the step
from a command's options to the model layer it builds."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ffn_cli.cli.complete import complete_presets
from ffn_cli.cli.numbers import parse_int
from ffn_cli.i18n import _

if TYPE_CHECKING:
    from ffn_cli.models.layer_select import LayerChoice

__all__ = ["ConfigOpt", "LayerOpt", "ModelOpt", "PresetOpt", "RevisionOpt", "explicit", "model_layer"]

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


def explicit(ctx: typer.Context, names: Iterable[str]) -> dict[str, Any]:
    """The options among `names` that the user gave (not left at their defaults), with their values."""
    out = {}
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            out[name] = ctx.params[name]
    return out


def model_layer(
    ctx: typer.Context,
    *,
    preset: str | None,
    config: str | None,
    model: str | None,
    revision: str | None,
    layer: int | None,
    block: bool = False,
    default_dtype: str = "float32",
    not_spec: tuple[str, ...] = (),
) -> LayerChoice | None:
    """The layer a command builds from --preset / --config / --model, or None when none is given.
    `not_spec`: the command's options that share a name with an FFN override but mean something
    else there (bench's --fused picks an implementation)."""
    if preset is None and config is None and model is None:
        from ffn_cli.cli.common import refuse_unused

        refuse_unused({"layer": layer, "revision": revision}, _("picks a layer of a model: give --preset, --config or --model"))
        return None
    from ffn_cli.models.layer_select import select_layer  # the model readers load with a model
    from ffn_cli.models.source import load_model

    loaded = load_model(preset=preset, config=config, model=model, revision=revision)
    given = explicit(ctx, [name for name in ctx.params if name not in not_spec])
    return select_layer(loaded, layer, given, block=block, default_dtype=default_dtype)
