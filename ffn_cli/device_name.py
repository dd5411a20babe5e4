"""`--device` text → (kind, index), and `--dtype` text, checked as text before anything asks
torch about devices or loads it.

So `cuda:x` or `cuda:-1` is a usage error (exit 2) on every machine, not a question about
CUDA that a machine without it answers first. Pure Python: no torch.
"""

from __future__ import annotations

import difflib

from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.names import unknown_name

__all__ = ["RUN_DTYPES", "check_run_dtype", "parse_device_name"]

# The dtypes a module is built and run in (torch's names for them), in the order errors list them.
RUN_DTYPES = ("float32", "float64", "float16", "bfloat16")

# More CUDA devices than any machine has: an index past this is a typo, not a device.
MAX_DEVICE_INDEX = 4095
# What people call a CUDA device; spelled near "cpu", so a close match alone would suggest that.
_SAYS_CUDA = ("gpu", "nvidia", "cuda0", "cuda1")


def parse_device_name(name: str, kinds: tuple[str, ...] = ("cpu", "cuda", "meta")) -> tuple[str, int | None]:
    """'cpu' → ('cpu', None); 'cuda:1' → ('cuda', 1); anything else is an FFNError naming `kinds`."""
    text = name.strip().lower()
    kind, colon, index_text = text.partition(":")
    names = [k for k in kinds if k != "meta"] + ["cuda:N"] * ("cuda" in kinds) + ["meta"] * ("meta" in kinds)
    usage = _("{names} or {last}").format(names=", ".join(names[:-1]), last=names[-1]) if len(names) > 1 else names[0]
    if kind not in kinds or (colon and kind != "cuda"):
        close = ["cuda"] if kind in _SAYS_CUDA and "cuda" in kinds else difflib.get_close_matches(kind, kinds, n=1, cutoff=0.5)
        guess = _("did you mean {names}? ").format(names=close[0]) if close and not colon else ""
        raise FFNError("device", name, _("{guess}use {usage}").format(guess=guess, usage=usage))
    if not colon:
        return kind, None
    # isdigit() alone accepts '²', which int() refuses; and a long string of digits is no index.
    if not (index_text.isascii() and index_text.isdigit()) or len(index_text) > 4 or int(index_text) > MAX_DEVICE_INDEX:
        raise FFNError(
            "device",
            name,
            _("cuda:N takes a device number from 0 to {last}; use {usage}").format(last=MAX_DEVICE_INDEX, usage=usage),
        )
    return kind, int(index_text)


def check_run_dtype(name: str) -> str:
    """`name` if a module can run in it, else an FFNError listing those it can (with a guess)."""
    if name not in RUN_DTYPES:
        raise unknown_name("dtype", name, list(RUN_DTYPES), what=N_("dtype"))
    return name
