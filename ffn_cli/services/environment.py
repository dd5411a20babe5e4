"""What a command that runs torch needs of the machine before torch is imported: a writable
temporary folder, and cache variables that name folders. Checked by the services that run
modules, so the CLI and the API say the same."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import _

__all__ = ["require_cache_dirs", "require_temp_dir"]


def require_temp_dir() -> None:
    """torch writes caches and multiprocessing its sockets under the temp folder; with none
    writable (/tmp read-only, TMPDIR unset) they fail deep inside an import. Say so first."""
    try:
        tempfile.gettempdir()
    except OSError:
        raise FFNRuntimeError(
            _("no writable temporary folder (/tmp, /var/tmp or this folder); set TMPDIR to one, torch needs it")
        ) from None


def require_cache_dirs(names: tuple[str, ...], why: str) -> None:
    """Each variable of `names` that is set must name a folder, or one that can be made there: a
    file (/dev/null) fails deep inside torch with a bare FileExistsError."""
    for name in names:
        value = os.environ.get(name)
        if not value:
            continue
        path = Path(value).expanduser()
        existing = next((p for p in [path, *path.parents] if p.exists()), None)
        if existing is not None and not existing.is_dir():
            where = _("is not a folder") if existing == path else _("is under {existing}, which is not a folder").format(existing=existing)
            raise FFNRuntimeError(
                _("{name}={value!r} {where}; {why}: point it at a folder or unset it").format(name=name, value=value, where=where, why=why)
            )
