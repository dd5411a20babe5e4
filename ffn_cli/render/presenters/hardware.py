"""The presenters of `ffn hardware`'s results (services/results.py): the GPU table, with this
CPU's row when measured, and a profile of this device with the file it was saved to."""

from __future__ import annotations

from ffn_cli.render.hardware import hardware_data, hardware_view
from ffn_cli.render.presenters import Presented
from ffn_cli.render.profile import profile_data, profile_view
from ffn_cli.services.results import DeviceProfiled, GPUTable

__all__ = ["present"]


def present(result: GPUTable | DeviceProfiled) -> Presented:
    """The view and the `--json` of either of `ffn hardware`'s results."""
    if isinstance(result, DeviceProfiled):
        profile, path = result.profile, result.path
        return Presented(lambda: profile_view(profile, path), lambda: profile_data(profile, path))

    gpus, cpu = list(result.gpus), result.cpu
    return Presented(lambda: hardware_view(gpus, cpu), lambda: hardware_data(gpus, cpu))
