"""Files the tool writes (a plot, an export): checked before the work, written whole or not at all.

A destination is refused up front (before a benchmark spends minutes) when it could never be
written: a folder, a device, a name in a folder that is missing or does not take new files. The
write itself goes to a temp file beside the target, renamed over it when complete; the temp file
is removed on any failure, and on SIGTERM / SIGHUP too, since `ffn_cli.cli.signals` turns those
into an exception that unwinds through here.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _

__all__ = ["check_output_file", "write_atomically"]


def check_output_file(option: str, path: str, suffixes: Sequence[str]) -> Path:
    """`path` as a Path, or FFNError (exit 2) naming `option` if a file could not be written there."""
    target = Path(path).expanduser()
    if target.suffix.lower() not in suffixes:
        raise FFNError(option, path, _("a file name ending in {suffixes}").format(suffixes=", ".join(suffixes)))
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise FFNError(option, path, _("cannot be inspected: {reason}").format(reason=exc.strerror or exc)) from None
    if mode is not None and stat.S_ISDIR(mode):
        raise FFNError(option, path, _("is a directory; give a file name in it"))
    if mode is not None and not stat.S_ISREG(mode):
        raise FFNError(option, path, _("is not a regular file (a device, a pipe or a socket)"))
    folder = target.parent
    if not folder.is_dir():
        raise FFNError(option, path, _("its folder {folder} does not exist").format(folder=folder))
    _probe(option, path, folder)
    return target


def _probe(option: str, path: str, folder: Path) -> None:
    """Create and remove a file in `folder`: permissions, read-only mounts and pseudo file systems
    (/proc, /sys) all answer the same question this way."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".ffn-write-check.", dir=folder)
    except OSError as exc:
        raise FFNError(
            option, path, _("cannot write in its folder {folder}: {reason}").format(folder=folder, reason=exc.strerror or exc)
        ) from None
    os.close(fd)
    os.unlink(probe)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(target: Path, write: Callable[[str], None], *, option: str) -> Path:
    """Call write(temp_path) for a temp file beside `target`, then rename it over `target`.
    A write that fails (a full disk, the folder removed meanwhile) is one error naming `option`."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent)
    except OSError as exc:
        raise FFNRuntimeError(
            _("--{option} {target}: cannot be written: {reason}").format(option=option, target=target, reason=exc.strerror or exc)
        ) from None
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; give it an ordinary file's mode
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FFNRuntimeError(
            _("--{option} {target}: cannot be written: {reason}").format(option=option, target=target, reason=exc.strerror or exc)
        ) from None
    except BaseException:  # a failure, Ctrl-C or a termination signal: no partial file stays
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
