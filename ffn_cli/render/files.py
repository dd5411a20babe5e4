"""Files the tool writes (plots, `--svg` / `--html` pages): checked before the work, written
whole or not at all."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from ffn_cli.errors import FFNError

__all__ = ["check_target", "write_atomically"]


def check_target(option: str, path: str, suffixes: Sequence[str]) -> Path:
    """Refuse a destination we could not write, before any work starts."""
    target = Path(path)
    if target.suffix.lower() not in suffixes:
        raise FFNError(option, path, "a file name ending in " + ", ".join(suffixes))
    if not target.parent.is_dir():
        raise FFNError(option, path, f"its folder {target.parent} does not exist")
    if not os.access(target.parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise FFNError(option, path, "is not writable here")
    if target.is_dir():
        raise FFNError(option, path, "is a folder; give a file name")
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(target: Path, write: Callable[[str], None]) -> Path:
    """Call write(temporary path) beside the target, then rename it into place: a reader never
    sees half a file, and a failure leaves the old file as it was."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; give it an ordinary file's mode
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
