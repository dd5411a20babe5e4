"""The layout of a model no reader knows, kept on disk so a second call answers without building.

Reading a layout (ffn_cli.configs.layer_read) imports torch and transformers and builds one decoder
layer of each kind: seconds. What it yields depends only on the config's content, the
transformers version and ffn's own code, so those are the key: the config hashed as read from the
file, before anything is built (transformers adds keys to the dicts it is handed, a `rope_scaling`
gains `rope_theta`; the build gets a copy), the transformers and ffn versions, this format, the
fields of every class the layout is made of, and the source of the modules that read it (a
changed reader misses). Stored as JSON under $XDG_CACHE_HOME/ffn/layout (else
~/.cache/ffn/layout), one file per key, written whole or not at all (ffn_cli.outputs.write_text).

An entry is never trusted unchecked: it must name its own key, carry the SHA-256 of its payload,
and hold only the classes a layout is made of (listed from BuiltLayout's field types), each value
of its field's declared type, each object rebuilt through its own constructor, which validates it
as it validates a reader's. Anything else (a file
that does not parse, is too large, names another class, fails a check) is a miss, and is rewritten
after the build. A directory that cannot be made or written is skipped. Torch-free: a hit imports
neither torch nor transformers.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ffn_cli.configs.built import BuiltLayout
from ffn_cli.configs.built_cache import cache_dir as _built_dir
from ffn_cli.configs.cache_files import config_text, read_entry, sources_digest, write_entry
from ffn_cli.i18n import Message

__all__ = ["FORMAT", "cache_dir", "cache_key", "layout_cached", "load", "store"]

# Bumped whenever what is stored changes in a way the fields and sources below do not show.
FORMAT = 2
# A layout is tens of kilobytes (a vision tower's tensors listed by name); much more is not ours.
_MAX_BYTES = 8 << 20
# The modules whose code decides what a layout holds: their source is part of the key.
_READERS = (
    "ffn_cli.configs.layer_read",  # a package: every module in it
    "ffn_cli.configs.meta_build",
    "ffn_cli.configs.attribution",
    "ffn_cli.models.mixers",
    "ffn_cli.configs.windows",
    "ffn_cli.models.spec",
    "ffn_cli.models.tensor_notes",
    "ffn_cli.configs.built",
    "ffn_cli.configs.layout_cache",
)

Build = Callable[..., BuiltLayout]


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/ffn/layout, or ~/.cache/ffn/layout, beside the counts' cache."""
    return _built_dir().parent / "layout"


# --- the classes a layout is made of -------------------------------------------------------------


@functools.cache
def _classes() -> dict[str, type]:
    """Every dataclass reachable from BuiltLayout's field types, by qualified name: the only
    classes an entry may name."""
    found: dict[str, type] = {}

    def visit(tp: Any) -> None:
        for arg in typing.get_args(tp):
            visit(arg)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            name = f"{tp.__module__}.{tp.__qualname__}"
            if name in found:
                return
            found[name] = tp
            hints = typing.get_type_hints(tp)
            for f in dataclasses.fields(tp):
                visit(hints[f.name])

    visit(BuiltLayout)
    return found


@functools.cache
def _schema() -> str:
    """The fields of every class above, and the source of the modules that read a layout."""
    digest = hashlib.sha256()
    for name, cls in sorted(_classes().items()):
        fields = ",".join(f.name for f in dataclasses.fields(cls) if f.init)
        digest.update(f"{name}({fields})\n".encode())
    digest.update(sources_digest(_READERS).encode())
    return digest.hexdigest()


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def cache_key(config: Mapping[str, Any]) -> str | None:
    """The hash of the config as read (its content: key order and whitespace aside), the
    transformers and ffn versions, the format and the schema; None when the config does not
    serialise or transformers is absent."""
    version = _version("transformers")
    if version is None:
        return None
    text = config_text(config)
    if text is None:
        return None
    return hashlib.sha256(f"{FORMAT}\n{version}\n{_version('ffn-cli')}\n{_schema()}\n{text}".encode()).hexdigest()


# --- to JSON and back ----------------------------------------------------------------------------


class _Unstorable(Exception):
    """A value the codec does not write: the layout is answered, not stored."""


def _encode(value: Any) -> Any:
    if isinstance(value, Message):  # before str: its id and values travel, each said in the reader's language
        return {"message": value.msgid, "parts": [_encode(p) for p in value.parts], "args": {k: _encode(v) for k, v in value.args.items()}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {"dict": {k: _encode(v) for k, v in value.items()}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = f"{type(value).__module__}.{type(value).__qualname__}"
        if _classes().get(name) is not type(value):
            raise _Unstorable(name)
        fields = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return {"class": name, "fields": fields}
    raise _Unstorable(type(value).__name__)


def _decode(data: Any) -> Any:
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [_decode(v) for v in data]
    if not isinstance(data, dict) or len(data) not in (1, 2, 3):
        raise ValueError("not an encoded value")
    if set(data) == {"tuple"} and isinstance(data["tuple"], list):
        return tuple(_decode(v) for v in data["tuple"])
    if set(data) == {"dict"} and isinstance(data["dict"], dict):
        return {str(k): _decode(v) for k, v in data["dict"].items()}
    if set(data) == {"message", "parts", "args"} and isinstance(data["message"], str):
        parts, args = _decode(data["parts"]), data["args"]
        if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts) or not isinstance(args, dict):
            raise ValueError("not a message")
        return Message(data["message"], parts=tuple(parts), **{str(k): _decode(v) for k, v in args.items()})
    if set(data) == {"class", "fields"} and isinstance(data["fields"], dict):
        cls = _classes().get(data["class"])
        if cls is None:
            raise ValueError(f"{data['class']} is no part of a layout")
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        if not set(data["fields"]) <= names:
            raise ValueError(f"{data['class']} has no field {sorted(set(data['fields']) - names)}")
        fields = {k: _decode(v) for k, v in data["fields"].items()}
        hints = _hints(cls)
        wrong = [k for k, v in fields.items() if not _conforms(v, hints[k])]
        if wrong:
            raise ValueError(f"{data['class']}: {wrong} not of their declared types")
        return cls(**fields)  # and its own checks run
    raise ValueError("not an encoded value")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _conforms(value: Any, hint: Any) -> bool:
    """Whether `value` is of the declared type `hint` (unions, literals, tuples, the scalars, the
    classes); a hint this check does not read leaves the value to the constructor's checks."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin is typing.Union or origin is types.UnionType:
        return any(_conforms(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if hint is type(None):
        return value is None
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(args) == len(value) and all(_conforms(v, a) for v, a in zip(value, args, strict=True))
    if origin is not None:
        return isinstance(value, origin) if isinstance(origin, type) else True
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _path(key: str) -> Path:
    return cache_dir() / f"{key}.json"


def _payload_text(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)


def load(config: Mapping[str, Any], *, name: str, source: str) -> tuple[BuiltLayout, Path] | None:
    """The stored layout of `config`, named for this call, and the file it came from; None on a
    miss or on anything that is not a well-formed, intact entry."""
    key = cache_key(config)
    if key is None:
        return None
    path = _path(key)
    data = read_entry(path, key, _MAX_BYTES)
    if data is None:
        return None
    try:
        payload = data["layout"]
        if data.get("sha256") != hashlib.sha256(_payload_text(payload).encode()).hexdigest():
            return None
        stored = _decode(payload)
        if not isinstance(stored, BuiltLayout):
            return None
        spec = dataclasses.replace(stored.spec, name=name, source=source)
        return dataclasses.replace(stored, spec=spec, config=config, source=source), path
    except Exception:  # a damaged entry is a miss whatever its damage: never a crash
        return None


def store(config: Mapping[str, Any], layout: BuiltLayout) -> Path | None:
    """Write the layout of `config`; the path, or None when it could not be written or holds a
    value the codec does not write, which is never an error."""
    key = cache_key(config)
    if key is None:
        return None
    try:
        payload = _encode(dataclasses.replace(layout, config={}))
        text = _payload_text(payload)
    except (_Unstorable, TypeError, ValueError):
        return None
    return write_entry(_path(key), {"key": key, "sha256": hashlib.sha256(text.encode()).hexdigest(), "layout": payload})


def _layout_by_building(config: dict[str, Any], *, name: str, source: str, known: tuple[str, ...]) -> BuiltLayout:
    from ffn_cli.configs import fallback  # looked up at the call: the build the caller's module holds now

    return fallback.layout_by_building(config, name=name, source=source, known=known)


def layout_cached(
    config: Mapping[str, Any], *, name: str, source: str, known: tuple[str, ...], use_cache: bool = True, build: Build | None = None
) -> BuiltLayout:
    """The layout of `config` (fallback.layout_by_building, or `build`), answered from the cache
    when it holds one for this config, and stored there after a build. The key is taken from the
    config as given, and the build gets a copy: the caller's config stays as read."""
    if use_cache:
        hit = load(config, name=name, source=source)
        if hit is not None:
            return hit[0]
    built = (build or _layout_by_building)(copy.deepcopy(dict(config)), name=name, source=source, known=known)
    layout = dataclasses.replace(built, config=config)
    if use_cache:
        store(config, layout)
    return layout
