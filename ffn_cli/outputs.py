"""Every file the tool writes (a plot, a page, an export, the measured profile) goes through here.

The guarantees, in order:

- Checked before the work: a destination that could never be written (a folder, a device, a
  name in a folder that is missing or takes no new files) is refused before a benchmark spends
  minutes (`check_output_file`).
- Nothing overwritten by mistake: two outputs naming one file, or an output naming a file the
  command reads (its config, the user's module, a profile), are refused up front, compared as
  the files they are (same device and inode, or the same real path), not as strings
  (`check_distinct`).
- Written whole or not at all: the bytes go to a temporary file created exclusively beside the
  target (O_CREAT | O_EXCL | O_NOFOLLOW, a random suffix, its name shortened to fit NAME_MAX), so
  a link planted there is never followed; fsync'd, given the target's mode (a new file: the
  mode the umask leaves), then renamed over the target. On any failure, Ctrl-C, or SIGTERM /
  SIGHUP (`ffn_cli.cli.signals` turns those into an exception that unwinds through here) the
  temporary file is removed and the target is left as it was (`write_file`).
"""

from __future__ import annotations

import errno
import importlib.util
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.i18n import _

__all__ = [
    "HTML_FILES",
    "PLOT_FILES",
    "SVG_FILES",
    "check_distinct",
    "check_output_file",
    "check_plot_file",
    "destination_problem",
    "same_file",
    "temp_name",
    "write_file",
    "write_text",
]

HTML_FILES = (".html", ".htm")
SVG_FILES = (".svg",)
PLOT_FILES = (".png", ".svg", ".pdf")
NAME_MAX = 255  # bytes in one file name on Linux, macOS and Windows alike; pathconf may say less
_RANDOM_HEX = 8
_TEMP_OVERHEAD = len(".") + len(".") + _RANDOM_HEX + len(".tmp")


def check_output_file(option: str, path: str, suffixes: Sequence[str]) -> Path:
    """`path` as a Path, or FFNError (exit 2) naming `option` if a file could not be written there."""
    target = Path(path).expanduser()
    if target.suffix.lower() not in suffixes:
        raise FFNError(option, path, _("a file name ending in {suffixes}").format(suffixes=", ".join(suffixes)))
    if os.path.isdir(target):
        raise FFNError(option, path, _("is a directory; give a file name in it"))
    problem = destination_problem(target)
    if problem is not None:
        raise FFNError(option, path, problem)
    return target


def check_plot_file(path: str) -> Path:
    """--plot's file, refused before any work starts when it could not be written or drawn."""
    target = check_output_file("plot", path, PLOT_FILES)
    if importlib.util.find_spec("matplotlib") is None:  # found, not loaded: nothing is drawn yet
        raise FFNRuntimeError("--plot needs matplotlib: pip install ffn-cli[plot]")
    return target


def destination_problem(target: Path, *, room_bytes: int = 0) -> str | None:
    """Why no file could be written at `target`, in words, or None when one can; `room_bytes`:
    also refuse a file system with less free space than that (a file of known size)."""
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        return _("cannot be inspected: {reason}").format(reason=getattr(exc, "strerror", None) or exc)
    if mode is not None and stat.S_ISDIR(mode):
        return _("is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        return _("is not a regular file (a device, a pipe or a socket)")
    folder = target.parent
    if not folder.is_dir():
        return _("its folder {folder} does not exist").format(folder=folder)
    return _probe(folder) or (_room_problem(folder, room_bytes) if room_bytes else None)


def _probe(folder: Path) -> str | None:
    """Create and remove a file in `folder`: permissions, read-only mounts and pseudo file systems
    (/proc, /sys) all answer the same question this way."""
    try:
        fd, probe = _open_temp(folder / "ffn-write-check", 0o600)
    except OSError as exc:
        return _("cannot write in its folder {folder}: {reason}").format(folder=folder, reason=exc.strerror or exc)
    os.close(fd)
    os.unlink(probe)
    return None


def _room_problem(folder: Path, room_bytes: int) -> str | None:
    try:
        fs = os.statvfs(folder)
    except (OSError, AttributeError):  # no statvfs (Windows): the write itself will say
        return None
    if fs.f_bavail * fs.f_frsize >= room_bytes:
        return None
    return _("cannot write in its folder {folder}: {reason}").format(folder=folder, reason=os.strerror(errno.ENOSPC))


def same_file(a: Path, b: Path) -> bool:
    """Whether two names reach one file: the same real path (links resolved; a file not yet made
    is named by its folder's real path), or one existing file reached by two links."""
    try:
        return os.path.realpath(a) == os.path.realpath(b) or os.path.samefile(a, b)
    except (OSError, ValueError):  # one of them does not exist yet (the real paths said it all), or no file has that name
        return False


def check_distinct(outputs: Mapping[str, Path], inputs: Mapping[str, Iterable[Path]]) -> None:
    """FFNError naming both options when two outputs name one file, or an output names a file
    the command reads: it would be written over, or over the other output, with no word said."""
    names = list(outputs)
    for i, option in enumerate(names):
        for other in names[i + 1 :]:
            if same_file(outputs[option], outputs[other]):
                raise FFNError(
                    option,
                    str(outputs[option]),
                    _("is also the file of --{other}: give each output its own file").format(other=other),
                )
        for source, files in inputs.items():
            if any(same_file(outputs[option], file) for file in files):
                raise FFNError(
                    option,
                    str(outputs[option]),
                    _("is the file --{source} reads: writing it would destroy it; give another file").format(source=source),
                )


def _name_max(folder: Path) -> int:
    try:
        return min(NAME_MAX, os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows), or the folder will not say
        return NAME_MAX


def temp_name(name: str, name_max: int = NAME_MAX) -> str:
    """`.NAME.RANDOM.tmp`, NAME cut (whole characters, counted in bytes as the file system counts
    them) so that the whole fits in `name_max` bytes."""
    room = max(0, name_max - _TEMP_OVERHEAD)
    encoded = os.fsencode(name)
    kept = os.fsdecode(encoded[:room]) if len(encoded) > room else name
    while len(os.fsencode(kept)) > room:  # a multi-byte character cut in two decodes to a surrogate: drop it
        kept = kept[:-1]
    return f".{kept}.{os.urandom(_RANDOM_HEX // 2).hex()}.tmp"


def _open_temp(target: Path, mode: int) -> tuple[int, Path]:
    """A new file beside `target`, made by this call alone (never an existing file, never through a
    link), created with `mode` (less the umask)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    name_max = _name_max(target.parent)
    for _attempt in range(100):
        tmp = target.parent / temp_name(target.name, name_max)
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:  # a name someone else holds (or a planted link): draw another
            continue
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target.parent))


def _kept_mode(target: Path) -> int | None:
    """The permission bits of the file being replaced (a 0600 page stays 0600); None for a new one."""
    try:
        st = target.stat()
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable where the system allows opening a folder."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_file(target: Path, write: Callable[[BinaryIO], None], *, option: str) -> Path:
    """Call write(handle) on a temporary file beside `target`, then rename it over `target`.
    A write that fails (a full disk, the folder removed meanwhile) is one error naming `option`."""
    mode = _kept_mode(target)
    try:
        # Private while written when it replaces a file (its own mode is given at the end); a new
        # file is made with the mode the umask leaves, which it keeps.
        fd, tmp = _open_temp(target, 0o600 if mode is not None else 0o666)
    except OSError as exc:
        raise _write_error(option, target, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _write_error(option, target, exc) from None
    except BaseException:  # a failure, Ctrl-C or a termination signal: no partial file stays
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)
    return target


def write_text(target: Path, text: str, *, option: str) -> Path:
    """`text` as UTF-8, written as `write_file` writes."""
    data = text.encode("utf-8")

    def write(handle: BinaryIO) -> None:
        handle.write(data)

    return write_file(target, write, option=option)


def _write_error(option: str, target: Path, exc: OSError) -> FFNRuntimeError:
    return FFNRuntimeError(
        _("--{option} {target}: cannot be written: {reason}").format(option=option, target=target, reason=exc.strerror or exc)
    )
