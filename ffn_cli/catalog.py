"""Gettext catalogs, read and compiled without GNU gettext: a `.po` file's entries, and the
binary `.mo` that the standard `gettext` module loads. The install compiles each shipped `.po`
(setup.py); a source checkout compiles it on first use (ffn_cli/i18n.py)."""

from __future__ import annotations

import ast
import struct
from dataclasses import dataclass, field

__all__ = ["Entry", "mo_bytes", "read_po"]

_MO_MAGIC = 0x950412DE


@dataclass
class Entry:
    """One message: its English id (and plural), its translation(s), and its flags (`fuzzy`,
    `python-brace-format`). `msgstr` has one string, or one per plural form."""

    msgid: str
    msgid_plural: str | None = None
    msgstr: list[str] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)
    line: int = 0

    @property
    def translated(self) -> bool:
        return bool(self.msgstr) and all(self.msgstr) and "fuzzy" not in self.flags


def _string(text: str, path: str, number: int) -> str:
    """A .po string literal ("…" with C escapes) as Python reads the same literal."""
    text = text.strip()
    if not (len(text) >= 2 and text[0] == text[-1] == '"'):
        raise ValueError(f"{path}:{number}: expected a quoted string, got {text[:40]!r}")
    return str(ast.literal_eval(text))


def read_po(text: str, path: str = "<po>") -> list[Entry]:
    """The entries of a .po file, the header (msgid "") first when there is one; obsolete (#~)
    entries are skipped."""
    entries: list[Entry] = []
    current: Entry | None = None
    flags: set[str] = set()
    target: tuple[str, int] | None = None  # which field a continuation line extends

    def finish() -> None:
        nonlocal current
        if current is not None:
            entries.append(current)
        current = None

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            finish()
            target = None
            continue
        if line.startswith("#~"):
            continue
        if line.startswith("#,"):
            finish()
            flags |= {f.strip() for f in line[2:].split(",") if f.strip()}
            continue
        if line.startswith("#"):
            if current is not None and target is not None:
                finish()
            continue
        if line.startswith("msgid_plural"):
            assert current is not None
            current.msgid_plural = _string(line[len("msgid_plural") :], path, number)
            target = ("plural", 0)
        elif line.startswith("msgid"):
            finish()
            current = Entry(_string(line[len("msgid") :], path, number), flags=flags, line=number)
            flags = set()
            target = ("id", 0)
        elif line.startswith("msgstr["):
            if current is None:
                raise ValueError(f"{path}:{number}: msgstr without a msgid")
            index = int(line[len("msgstr[") : line.index("]")])
            current.msgstr.append(_string(line[line.index("]") + 1 :], path, number))
            target = ("str", index)
        elif line.startswith("msgstr"):
            if current is None:
                raise ValueError(f"{path}:{number}: msgstr without a msgid")
            current.msgstr = [_string(line[len("msgstr") :], path, number)]
            target = ("str", 0)
        elif line.startswith('"'):
            if current is None or target is None:
                raise ValueError(f"{path}:{number}: a string continues nothing")
            piece = _string(line, path, number)
            kind, index = target
            if kind == "id":
                current.msgid += piece
            elif kind == "plural":
                current.msgid_plural = (current.msgid_plural or "") + piece
            else:
                current.msgstr[index] += piece
        else:
            raise ValueError(f"{path}:{number}: cannot read {line[:40]!r}")
    finish()
    return entries


def mo_bytes(entries: list[Entry]) -> bytes:
    """The GNU .mo file of the translated entries (fuzzy and empty ones left out, as msgfmt does),
    sorted by id so gettext can search it."""
    pairs: dict[bytes, bytes] = {}
    for entry in entries:
        if not entry.msgid:  # the header: always kept, it names the charset
            pairs[b""] = "\0".join(entry.msgstr).encode("utf-8")
        elif entry.translated:
            key = entry.msgid if entry.msgid_plural is None else f"{entry.msgid}\0{entry.msgid_plural}"
            pairs[key.encode("utf-8")] = "\0".join(entry.msgstr).encode("utf-8")
    keys = sorted(pairs)
    ids = b"".join(k + b"\0" for k in keys)
    strs = b"".join(pairs[k] + b"\0" for k in keys)
    header_size = 7 * 4
    id_table = header_size
    str_table = id_table + len(keys) * 8
    ids_start = str_table + len(keys) * 8
    strs_start = ids_start + len(ids)
    id_offsets: list[int] = []
    str_offsets: list[int] = []
    position = 0
    for k in keys:
        id_offsets += [len(k), ids_start + position]
        position += len(k) + 1
    position = 0
    for k in keys:
        value = pairs[k]
        str_offsets += [len(value), strs_start + position]
        position += len(value) + 1
    header = struct.pack("<7I", _MO_MAGIC, 0, len(keys), id_table, str_table, 0, 0)
    return header + struct.pack(f"<{len(id_offsets)}I", *id_offsets) + struct.pack(f"<{len(str_offsets)}I", *str_offsets) + ids + strs
