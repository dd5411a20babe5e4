"""The Chinese catalog: complete, not stale, its placeholders and markup the English ones, and
compiled by the install into the .mo that Python's gettext loads (GNU msgfmt agreeing, where
it is installed)."""

from __future__ import annotations

import gettext
import importlib.util
import re
import shutil
import string
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ffn_cli.catalog import mo_bytes, read_po

ROOT = Path(__file__).resolve().parent.parent
PO = ROOT / "ffn_cli" / "locale" / "zh" / "LC_MESSAGES" / "ffn.po"


def _extractor():
    spec = importlib.util.spec_from_file_location("extract_messages", ROOT / "scripts" / "extract_messages.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def messages() -> dict:
    return _extractor().all_messages()


@pytest.fixture(scope="module")
def entries() -> list:
    return read_po(PO.read_text(encoding="utf-8"), str(PO))


def test_every_message_has_a_chinese_translation(messages, entries) -> None:
    translated = {e.msgid for e in entries if e.translated}
    missing = [f"{where}: {msgid!r}" for msgid, (_plural, where) in messages.items() if msgid not in translated]
    hint = "scripts/extract_messages.py --update"
    assert not missing, f"{len(missing)} messages without a Chinese entry ({hint}):\n" + "\n".join(missing[:40])


def test_no_entry_is_stale(messages, entries) -> None:
    stale = [e.msgid for e in entries if e.msgid and e.msgid not in messages]
    assert not stale, f"entries no code uses any more: {stale[:20]}"


def test_no_message_is_listed_twice(entries) -> None:
    twice = [m for m, n in Counter(e.msgid for e in entries).items() if n > 1]
    assert not twice


def _fields(text: str) -> Counter:
    return Counter(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)


_MARKUP = re.compile(r"\[/?[a-z][a-z ]*\]|\[/\]")


@pytest.mark.parametrize("part", ["placeholders", "markup"])
def test_translations_keep_placeholders_and_markup(entries, part: str) -> None:
    def of(text: str) -> Counter:
        return _fields(text) if part == "placeholders" else Counter(_MARKUP.findall(text))

    wrong = [
        (e.msgid, e.msgstr[0])
        for e in entries
        if e.msgid and e.translated and any(of(s) != of(e.msgid if e.msgid_plural is None else e.msgid_plural) for s in e.msgstr)
    ]
    assert not wrong, f"{part} differ between English and Chinese: {wrong[:10]}"


def test_a_chinese_sentence_appended_to_another_starts_without_a_space(entries) -> None:
    # English joins sentences with a space (" A sentence.", " {note}."); Chinese, ending the one before with 。, with none.
    sentence = re.compile(r" (?:[A-Z]|\{\w+\}|\d|\()")
    spaced = [(e.msgid, s) for e in entries if sentence.match(e.msgid) for s in e.msgstr if s.startswith(" ")]
    assert not spaced, spaced[:10]


def test_compiled_catalog_reads_back_every_translation(entries) -> None:
    catalog = gettext.GNUTranslations(__import__("io").BytesIO(mo_bytes(entries)))
    for e in entries:
        if e.msgid and e.translated and e.msgid_plural is None:
            assert catalog.gettext(e.msgid) == e.msgstr[0]
    assert catalog.gettext("no such message, surely") == "no such message, surely"


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="GNU gettext's msgfmt is not installed")
def test_gnu_msgfmt_accepts_the_catalog_and_agrees(tmp_path: Path, entries) -> None:
    """A second compiler: msgfmt checks the .po (brace-format placeholders included) and its .mo
    gives the same translation for every id."""
    out = tmp_path / "ffn.mo"
    subprocess.run(["msgfmt", "--check", "-o", str(out), str(PO)], check=True, capture_output=True)
    gnu = gettext.GNUTranslations(out.open("rb"))
    ours = gettext.GNUTranslations(__import__("io").BytesIO(mo_bytes(entries)))
    for e in entries:
        if e.msgid:
            assert ours.gettext(e.msgid) == gnu.gettext(e.msgid), e.msgid


def test_the_install_compiles_the_catalog(tmp_path: Path) -> None:
    """setup.py's build_py (what pip runs to build the wheel) writes ffn.mo beside the .po, and
    Python's gettext loads it from there."""
    build = tmp_path / "build"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)], cwd=ROOT, check=True, capture_output=True, timeout=120
    )
    locale_dir = build / "ffn_cli" / "locale"
    assert (locale_dir / "zh" / "LC_MESSAGES" / "ffn.mo").is_file()
    catalog = gettext.translation("ffn", localedir=locale_dir, languages=["zh"])
    assert catalog.gettext("Usage: ") != "Usage: "
