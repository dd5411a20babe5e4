"""`--gpu NAME` → a row of the table, forgiving case, spaces and the vendor's prefix, and
naming the closest keys when nothing matches (difflib)."""

from __future__ import annotations

import difflib
import re

from ffn_cli.hardware.gpus import GPU, GPUS, gpu_for_device_name
from ffn_cli.hardware.profile import PROFILE_NAME, load_profile

__all__ = ["UnknownGPU", "closest", "find_gpu", "gpu_keys"]


class UnknownGPU(LookupError):
    """No row is called `name`; `suggestions` are the closest keys."""

    def __init__(self, name: str, suggestions: list[str]) -> None:
        super().__init__(name)
        self.name = name
        self.suggestions = suggestions


def gpu_keys() -> list[str]:
    return [g.key for g in GPUS]


def _norm(text: str) -> str:
    text = re.sub(r"^(nvidia|amd)\s+|\b(geforce|instinct)\s+", "", text.strip().lower())
    return re.sub(r"[\s_]+", "-", text)


def _squashed(text: str) -> str:
    """The name with every space, dash, dot and bracket gone: rtx4090, RTX-4090 and "RTX 4090" are one name."""
    return re.sub(r"[^0-9a-z]", "", _norm(text))


def closest(word: str, choices: list[str], n: int = 3) -> list[str]:
    """The choices nearest to `word`, best first (difflib's ratio, cutoff 0.5)."""
    return difflib.get_close_matches(word, choices, n=n, cutoff=0.5)


def find_gpu(name: str) -> GPU:
    """The row whose key, alias or full name is `name` (case, spaces, dashes and an 'NVIDIA ' prefix aside);
    `this`: the measured profile's row (an error saying how to measure when there is none). A
    device's name as the driver reports it ('NVIDIA H100 80GB HBM3') is refused with the row its
    pattern matches named first: a pattern also matches other parts (a GH200, an H800 PCIe), and
    a row taken for them would size the wrong memory."""
    if name.strip().lower() == PROFILE_NAME:  # the machine ffn hardware --measure profiled
        return load_profile().as_gpu()
    wanted, squashed = _norm(name), _squashed(name)
    for gpu in GPUS:
        if squashed in {_squashed(known) for known in (gpu.key, *gpu.aliases, gpu.name, gpu.full_name)}:
            return gpu
    device = gpu_for_device_name(name) if re.match(r"\s*(nvidia|amd|tesla)\s", name, flags=re.IGNORECASE) else None
    names = {k: g.key for g in GPUS for k in (g.key, *g.aliases)}
    suggested = [device.key] if device is not None else []
    raise UnknownGPU(name, list(dict.fromkeys([*suggested, *(names[m] for m in closest(wanted, list(names)))])))
