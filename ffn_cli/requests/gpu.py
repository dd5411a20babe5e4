"""The one place a GPU's name becomes its row of ffn_cli/hardware's table, for every command and
the Python API alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _
from ffn_cli.names import either_of

if TYPE_CHECKING:
    from ffn_cli.hardware import GPU

__all__ = ["resolve_gpu"]


def resolve_gpu(name: str) -> GPU:
    """The table's row for --gpu NAME (`this`: the profile `ffn hardware --measure` saved), or
    a usage error naming the closest keys."""
    from ffn_cli.hardware import UnknownGPU, find_gpu, gpu_keys  # the GPU table loads with a GPU named
    from ffn_cli.hardware.profile import ProfileError

    try:
        return find_gpu(name)
    except ProfileError as missing:  # --gpu this before ffn hardware --measure
        raise FFNRuntimeError(str(missing)) from None
    except UnknownGPU as unknown:
        close = unknown.suggestions
        hint = _("did you mean {names}? ").format(names=either_of(close)) if close else ""
        raise FFNError(
            "gpu", name, _("{guess}known: {gpus} (ffn hardware lists them)").format(guess=hint, gpus=", ".join(gpu_keys()))
        ) from None
