"""A process's start-up without cyclic collections, and the end of it.

Loading what a command runs (Typer, rich, pydantic and, to run tensors, torch: some 190,000
objects with torch) makes objects that live as long as the process, and each collection on the
way walks all of them with nothing to free: some 0.2 s of `ffn trace`, 5 % of `ffn params`.
`ffn` as a process holds the collector from its first line (`ffn_cli.cli.main`) until its work
begins: when a command resolves the device it runs on or checks that an allocation fits
(`device.py`), runs the user's code (`user_code.py`), builds a model with transformers
(`models/meta_build.py`) or measures the machine (`ffn hardware --measure`). Then what start-up
made is frozen, so that no later collection walks it, and the collector runs again for what the
work makes. A command that never begins such work (`ffn params` of a known family, `--help`)
runs without a collection; its process ends at once. A process that never holds it (a notebook,
the tests' in-process runs) sees no change.
"""

from __future__ import annotations

import gc

__all__ = ["end_start_up", "hold_collections"]

_held = False  # whether `hold_collections` turned the collector off, and it is still off


def hold_collections() -> None:
    """No cyclic collection until `end_start_up` (a process's first line: the collector is on)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def end_start_up() -> None:
    """The work begins: what start-up made is frozen, and the collector runs again. Only a hold
    of `hold_collections` ends here: a pause of the work's own (`gc_paused`) stays as it is."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
