"""One cache entry on disk, for both of the fallback's caches (the counts, `built_cache.py`, and
the layout, `layout_cache.py`): a JSON object that names the key it was stored under, read
back only when it is a bounded, well-formed object under that key, and written through the one
writer (`ffn_cli/outputs.py`: whole or not at all). A cache is never trusted and never an
error: anything else is a miss, and a failed write is no answer lost."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ffn_cli.errors import FFNRuntimeError
from ffn_cli.outputs import write_text

__all__ = ["config_text", "read_entry", "sources_digest", "write_entry"]


def config_text(config: Any) -> str | None:
    """A config's content as one canonical text to hash (key order and whitespace aside); None when
    it does not serialise. An infinite float (Falcon-H1's time_step_limit, which transformers writes
    as {"__float__": "Infinity"} and the reader reads back as inf) hashes as JSON's Infinity."""
    try:
        return json.dumps(config, sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        return None


def read_entry(path: Path, key: str, max_bytes: int) -> dict[str, Any] | None:
    """The entry stored at `path` under `key`; None when there is none, it is larger than
    `max_bytes`, or it is not a JSON object naming that key."""
    try:
        if not path.is_file() or path.stat().st_size > max_bytes:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # unreadable, not UTF-8, not JSON: a miss
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def write_entry(path: Path, entry: dict[str, Any]) -> Path | None:
    """`entry` (with its "key") written to `path`; the path, or None when it could not be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_text(path, json.dumps(entry, sort_keys=True), option="config")
    except (OSError, FFNRuntimeError):
        return None


def sources_digest(modules: Iterable[str]) -> str:
    """The hash of the source of `modules`: the code that decides what an entry holds, part of
    its key, so that an entry made by other code is a miss. A package counts by every module in
    it (found on disk: its own code is not run, so a torch-free hit stays torch-free). A module
    whose file cannot be read counts by its name alone."""
    digest = hashlib.sha256()
    for module in modules:
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
        try:
            if spec is not None and spec.submodule_search_locations and origin:
                folder = Path(origin).parent
                for path in sorted(folder.rglob("*.py")):
                    digest.update(path.relative_to(folder).as_posix().encode())
                    digest.update(path.read_bytes())
            else:
                digest.update(Path(origin).read_bytes() if origin else module.encode())
        except OSError:
            digest.update(module.encode())
    return digest.hexdigest()
