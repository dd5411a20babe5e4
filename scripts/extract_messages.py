"""The message ids of ffn's catalog, and the Chinese catalog kept in step with them.

    python3 scripts/extract_messages.py            # list missing and stale entries; exit 1 if any
    python3 scripts/extract_messages.py --update   # add missing ids (empty, to translate), drop stale
    python3 scripts/extract_messages.py --append   # only append the missing ids at the end (to translate)
    python3 scripts/extract_messages.py --pot F    # write the template (.pot) to F

Ids come from two places: the literal arguments of `_()`, `N_()` and `ngettext()` in ffn_cli
(read with `ast`, as xgettext would with `--keyword=_ --keyword=N_ --keyword=ngettext:1,2`), and
the texts every command's --help shows (built with click, as `ffn --help` builds them).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PO_PATH = ROOT / "ffn_cli" / "locale" / "zh" / "LC_MESSAGES" / "ffn.po"
_KEYWORDS = {"_": 1, "N_": 1, "ngettext": 2}


def source_messages(root: Path = ROOT / "ffn_cli") -> dict[str, tuple[str | None, str]]:
    """msgid → (plural id or None, first 'file:line' that uses it)."""
    found: dict[str, tuple[str | None, str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _KEYWORDS):
                continue
            count = _KEYWORDS[node.func.id]
            args = node.args[:count]
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if any(isinstance(a, (ast.JoinedStr, ast.BinOp)) for a in args):
                raise SystemExit(f"{where}: {node.func.id}() of an f-string or a sum: the id must be one literal, filled with .format()")
            if len(args) < count or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args):
                continue  # _(name): translating at display an id marked elsewhere (N_, a help text)
            msgid = args[0].value  # type: ignore[attr-defined]
            plural = args[1].value if count == 2 else None  # type: ignore[attr-defined]
            found.setdefault(msgid, (plural, where))
    return found


def help_messages() -> dict[str, tuple[str | None, str]]:
    """Every text of `ffn --help` and of each command's --help."""
    import click

    from ffn_cli.cli.ffn_app import app
    from ffn_cli.cli.help_format import help_messages as command_messages

    group = __import__("typer").main.get_command(app)
    found: dict[str, tuple[str | None, str]] = {}
    root_ctx = click.Context(group, info_name="ffn")
    commands = [(group, root_ctx)]
    for name in group.list_commands(root_ctx):
        command = group.get_command(root_ctx, name)
        commands.append((command, click.Context(command, info_name=name, parent=root_ctx)))
    for command, ctx in commands:
        for message in command_messages(command, ctx):
            found.setdefault(message, (None, f"--help of {ctx.command_path}"))
    return found


def all_messages() -> dict[str, tuple[str | None, str]]:
    messages = source_messages()
    for msgid, value in help_messages().items():
        messages.setdefault(msgid, value)
    return messages


def _quote(text: str) -> str:
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t").replace("\n", "\\n")
    return f'"{body}"'


def _field(name: str, text: str) -> str:
    if "\n" not in text.rstrip("\n"):
        return f"{name} {_quote(text)}"
    lines = text.splitlines(keepends=True)
    return f'{name} ""\n' + "\n".join(_quote(line) for line in lines)


def write_po(entries: list, messages: dict[str, tuple[str | None, str]]) -> str:
    """The catalog text: the header, then one entry per message id in `messages`, with the
    translation `entries` already hold (empty where none)."""
    from ffn_cli.catalog import Entry

    header_text = PO_PATH.read_text(encoding="utf-8").split("\nmsgid", 1)[0] + "\n"
    by_id = {e.msgid: e for e in entries}
    header_msgstr = by_id[""].msgstr[0] if "" in by_id else ""
    blocks = [header_text.rstrip("\n") + "\n" + _field("msgid", "") + "\n" + _field("msgstr", header_msgstr)]
    for msgid, (plural, where) in messages.items():
        entry = by_id.get(msgid) or Entry(msgid, plural, [""])
        flags = set(entry.flags) - {"python-brace-format"}
        if "{" in msgid:
            flags.add("python-brace-format")
        lines = [f"#: {where}"]
        if flags:
            lines.append("#, " + ", ".join(sorted(flags)))
        lines.append(_field("msgid", msgid))
        if plural is not None:
            lines.append(_field("msgid_plural", plural))
            lines.append(_field("msgstr[0]", entry.msgstr[0] if entry.msgstr else ""))
        else:
            lines.append(_field("msgstr", entry.msgstr[0] if entry.msgstr else ""))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from ffn_cli.catalog import read_po

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the Chinese catalog: add missing ids, drop stale ones")
    parser.add_argument("--append", action="store_true", help="append the missing ids, empty, at the end of the Chinese catalog")
    parser.add_argument("--pot", type=Path, help="write the template of every message id to this file")
    args = parser.parse_args()
    messages = all_messages()
    entries = read_po(PO_PATH.read_text(encoding="utf-8"), str(PO_PATH))
    if args.pot:
        from ffn_cli.catalog import Entry

        args.pot.write_text(write_po([Entry("", msgstr=[entries[0].msgstr[0]])], messages), encoding="utf-8")
    known = {e.msgid for e in entries if e.msgid}
    missing = [m for m in messages if m not in known]
    stale = sorted(known - set(messages))
    untranslated = [e.msgid for e in entries if e.msgid in messages and not e.translated]
    if args.append:
        added = write_po([], {m: messages[m] for m in missing}).split("\n\n", 1)[1] if missing else ""
        with PO_PATH.open("a", encoding="utf-8") as po:
            po.write("\n" + added if added else "")
        print(f"{PO_PATH.relative_to(ROOT)}: {len(missing)} appended, to translate")
        return 0
    if args.update:
        PO_PATH.write_text(write_po(entries, messages), encoding="utf-8")
        print(f"{PO_PATH.relative_to(ROOT)}: {len(missing)} added, {len(stale)} dropped, {len(untranslated) + len(missing)} to translate")
        return 0
    for m in missing:
        print(f"missing: {messages[m][1]}: {m!r}")
    for m in stale:
        print(f"stale: {m!r}")
    for m in untranslated:
        print(f"untranslated: {m!r}")
    return 1 if missing or stale or untranslated else 0


if __name__ == "__main__":
    raise SystemExit(main())
