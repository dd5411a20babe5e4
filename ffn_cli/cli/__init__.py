"""The `ffn` command line: thin commands that turn options into a spec, call one core
function and hand its result to a renderer. Modules that import torch are imported inside
the commands that run models, so `ffn --help`, `ffn variants` and `ffn params` stay fast."""

from __future__ import annotations

from typing import Any

from ffn_cli.cli import columns  # noqa: F401  (first: before typer makes a console)
from ffn_cli.startup import hold_collections

__all__ = ["app", "main"]


def main() -> None:
    """`ffn` as a process (the console script, `python -m ffn_cli`): start-up holds the cyclic
    collector (ffn_cli/startup.py), so it begins before Typer is imported."""
    hold_collections()
    from ffn_cli.cli.ffn_app import main as run_ffn

    run_ffn()


def __getattr__(name: str) -> Any:
    # The Typer app loads on first use, so that `main` holds the collector before Typer loads.
    # Bound here, as the import of its module binds that module to the same name.
    if name == "app":
        from ffn_cli.cli.ffn_app import app

        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
