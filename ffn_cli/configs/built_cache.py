"""The fallback's counts, kept on disk so a second call answers without building the model.

Building a model with transformers costs seconds (importing torch and transformers, then the
build on meta); the counts it yields depend only on the config's content and the transformers
version. They are stored as JSON under the user's cache directory ($XDG_CACHE_HOME/ffn/built,
else ~/.cache/ffn/built), one file per key. The cache is a convenience, never a requirement: a
directory that cannot be made, read or written, or a file that does not parse, is skipped and the
model is built as without it. Torch-free: reading a hit imports neither torch nor transformers.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.metadata
import os
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ffn_cli.configs.cache_files import config_text, read_entry, sources_digest, write_entry
from ffn_cli.configs.fallback import PART_NAMES, BuiltModel, BuiltPart, RoutedExperts, count_by_building
from ffn_cli.i18n import Message

__all__ = ["FORMAT", "cache_dir", "cache_key", "count_cached", "load", "store"]

# Bumped whenever what is stored, or how the fallback counts, changes: older entries then miss.
FORMAT = 3
# A stored entry is a few kilobytes; anything much larger is not ours.
_MAX_BYTES = 1 << 20
# The modules whose code decides what a count holds: their source is part of the key. The layout
# reader's too: an entry counted because the layout was refused is a miss once the reader changes,
# so a model a newer reader lays out is never answered by its old count.
_COUNTERS = (
    "ffn_cli.configs.meta_build",
    "ffn_cli.configs.attribution",
    "ffn_cli.configs.fallback",
    "ffn_cli.configs.built_cache",
    "ffn_cli.configs.layer_read",  # a package: every module in it
    "ffn_cli.configs.encoder_decoder",
    "ffn_cli.configs.shared_blocks",
)


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/ffn/built, or ~/.cache/ffn/built when XDG_CACHE_HOME is unset or empty."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ffn" / "built"


def _transformers_version() -> str | None:
    try:
        return importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        return None


def _ffn_version() -> str:
    """ffn's own release: a newer one may lay out a model an older one counted by building."""
    try:
        return importlib.metadata.version("ffn-cli")
    except importlib.metadata.PackageNotFoundError:
        return ""


def cache_key(config: Mapping[str, Any]) -> str | None:
    """The hash of the config's content (key order and whitespace aside), the transformers and
    ffn versions, the format and the source of the code that counts and sorts the parts (a changed
    attribution rule is a miss, never a stale count); None when the config does not serialise
    or transformers is absent."""
    version = _transformers_version()
    if version is None:
        return None
    text = config_text(config)
    if text is None:
        return None
    return hashlib.sha256(f"{FORMAT}\n{version}\n{_ffn_version()}\n{_counters()}\n{text}".encode()).hexdigest()


@functools.cache
def _counters() -> str:
    return sources_digest(_COUNTERS)


def _path(key: str) -> Path:
    return cache_dir() / f"{key}.json"


def load(config: Mapping[str, Any], *, name: str, source: str) -> tuple[BuiltModel, Path] | None:
    """The stored counts of `config`, named for this call, and the file they came from; None on
    a miss or on anything that is not a well-formed entry."""
    key = cache_key(config)
    if key is None:
        return None
    path = _path(key)
    data = read_entry(path, key, _MAX_BYTES)
    if data is None:
        return None
    try:
        return _from_data(data["model"], name=name, source=source), path
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def store(config: Mapping[str, Any], built: BuiltModel) -> Path | None:
    """Write the counts of `config` (atomically: a reader never sees half a file); the path, or
    None when the cache could not be written, which is never an error."""
    key = cache_key(config)
    if key is None:
        return None
    path = _path(key)
    model = asdict(replace(built, cached_from=""))
    for routed in model["routed"]:
        routed["top_k_problem"] = _message_data(routed["top_k_problem"])
    model["notes"] = [_message_data(n) if isinstance(n, Message) else n for n in built.notes]
    return write_entry(path, {"key": key, "model": model})


def count_cached(
    config: Mapping[str, Any], *, name: str, source: str, known: tuple[str, ...], use_cache: bool = True, notes: tuple[str, ...] = ()
) -> BuiltModel:
    """count_by_building, answered from the cache when it holds this config's counts, and
    stored there after a build, with `notes` (why it was counted so) beside the build's own.

    The entry is keyed by the config as given: transformers adds keys to the dicts it is handed
    (a `rope_scaling` gains `rope_theta`), so the build gets a copy and the caller's config, the
    one the next call hashes, stays as read from the file."""
    if use_cache:
        hit = load(config, name=name, source=source)
        if hit is not None:  # a note given now stands for the stored one of its id (why, said in this language)
            given = {n.msgid for n in notes if isinstance(n, Message)}
            kept = tuple(n for n in hit[0].notes if not (isinstance(n, Message) and n.msgid in given))
            counted = replace(hit[0], cached_from=str(hit[1]), notes=(*kept, *notes))
            if notes:  # kept as said now: the next call in this language reads it back
                store(config, counted)
            return counted
    built = count_by_building(copy.deepcopy(dict(config)), name=name, source=source, known=known)
    built = replace(built, notes=(*built.notes, *notes))
    if use_cache:
        store(config, built)
    return built


def _ints(values: Any) -> tuple[int, ...]:
    if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise TypeError("not a list of integers")
    return tuple(values)


def _strs(values: Any) -> tuple[str, ...]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise TypeError("not a list of strings")
    return tuple(values)


def _notes(values: Any) -> tuple[str, ...]:
    """The notes as stored: a Message as its id and values (said in the reader's language), text as it is."""
    if not isinstance(values, list):
        raise TypeError("not a list of notes")
    return tuple(v if isinstance(v, str) else _message(v) or "" for v in values)


def _message_data(message: Message | None) -> dict[str, Any] | None:
    """A Message as its id and values: a hit is said in the reader's language, as a build is."""
    return None if message is None else {"msgid": message.msgid, "args": message.args}


def _message(data: Any) -> Message | None:
    if data is None:
        return None
    if not isinstance(data["msgid"], str) or not isinstance(data["args"], dict):
        raise TypeError("not a stored message")
    return Message(data["msgid"], **data["args"])


def _kind(value: Any) -> Any:
    if value not in PART_NAMES:
        raise KeyError(value)
    return value


def _from_data(data: Mapping[str, Any], *, name: str, source: str) -> BuiltModel:
    parts = tuple(
        BuiltPart(kind=_kind(p["kind"]), params=int(p["params"]), modules=_strs(p["modules"]), inactive_params=int(p["inactive_params"]))
        for p in data["parts"]
    )
    routed = tuple(
        RoutedExperts(
            kind=_kind(r["kind"]),
            modules=_strs(r["modules"]),
            containers=int(r["containers"]),
            params=int(r["params"]),
            experts=None if r["experts"] is None else int(r["experts"]),
            top_k=None if r["top_k"] is None else int(r["top_k"]),
            top_k_key=None if r["top_k_key"] is None else str(r["top_k_key"]),
            layer_top_k=_ints(r["layer_top_k"]),
            top_k_problem=_message(r["top_k_problem"]),
            zero_experts=int(r["zero_experts"]),
        )
        for r in data["routed"]
    )
    n_layers, d_model, vocab_size = (None if data[k] is None else int(data[k]) for k in ("n_layers", "d_model", "vocab_size"))
    return BuiltModel(
        name=name,
        model_type=str(data["model_type"]),
        source=source,
        model_class=str(data["model_class"]),
        transformers_version=str(data["transformers_version"]),
        parts=parts,
        routed=routed,
        notes=_notes(data["notes"]),
        n_layers=n_layers,
        d_model=d_model,
        vocab_size=vocab_size,
    )
