"""The `ffn` command line: thin commands that turn options into a spec, call one core
function and hand its result to a renderer. The commands import only torch-free layers at
the top (`.importlinter`'s `pure` contract); a command that runs a module imports its
service, and torch with it, when it runs, so `ffn --help`, `ffn variants`, `ffn hardware`
and `ffn params` never load torch."""

from __future__ import annotations

import gc

from ffn_cli.cli.ffn_app import app
from ffn_cli.cli.ffn_app import main as run_ffn

__all__ = ["app", "main"]


def main() -> None:
    """`ffn` as a process (the console script, `python -m ffn_cli`). What start-up imported
    (Typer, rich, ffn's commands) lives as long as the process: frozen, no later collection
    walks it. At exit Python runs full collections over every object still alive (with torch
    loaded, some 190,000); frozen again, they are not walked. Nothing of ours waits on a
    collection: files close in `with`, ranks stop in `finally`, atexit handlers still run."""
    gc.freeze()
    try:
        run_ffn()
    finally:
        gc.freeze()
