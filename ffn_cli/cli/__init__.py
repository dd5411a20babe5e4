"""The `ffn` command line: thin commands that turn options into a spec, call one core
function and hand its result to a renderer. Modules that import torch are imported inside
the commands that run models, so `ffn --help`, `ffn variants` and `ffn params` stay fast."""

from ffn_cli.cli import columns  # noqa: F401  (first: before typer makes a console)
from ffn_cli.cli.app import app, main

__all__ = ["app", "main"]
