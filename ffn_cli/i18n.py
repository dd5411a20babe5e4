"""The language ffn speaks: English, or Chinese through the standard `gettext` machinery.

Every user-visible string is an English message id passed to `_()` when it is shown, never when
a module is imported, so the language can be chosen once per run (`--lang`, `FFN_LANG`, then the
locale as gettext reads it) and a notebook can switch it with `set_language`. Strings kept at
module level are marked with `N_()` (a no-op the extractor sees) and translated where used.

The catalog is `ffn_cli/locale/zh/LC_MESSAGES/ffn.po`; the install compiles it to `ffn.mo`
(setup.py), and a source checkout, which has no `.mo`, compiles the `.po` in memory on first use.
"""

from __future__ import annotations

import gettext
import io
import os
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

__all__ = [
    "DOMAIN",
    "LANGUAGES",
    "LOCALE_DIR",
    "N_",
    "Message",
    "_",
    "language",
    "language_from_environment",
    "ngettext",
    "parse_language",
    "set_language",
    "shown",
    "tidy",
]

DOMAIN = "ffn"
LANGUAGES = ("en", "zh")
LOCALE_DIR = Path(__file__).parent / "locale"
# The locale variables gettext reads, in its order; LANGUAGE may list several, colon-separated.
_LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")


class _State:
    # None until first asked: then what the environment says (a notebook follows its locale too).
    translations: gettext.NullTranslations | None = None
    language = "en"


def _current() -> gettext.NullTranslations:
    if _State.translations is None:
        try:
            set_language(None)
        except ValueError:  # a bad FFN_LANG: the CLI says so; the API speaks English
            set_language("en")
    assert _State.translations is not None
    return _State.translations


def parse_language(text: str, source: str = "--lang") -> str:
    """'zh', 'zh_CN.UTF-8', 'zh-Hans', 'EN' → a language ffn speaks; anything else is refused."""
    code = text.strip().replace("-", "_").split(".")[0].split("_")[0].lower()
    if code not in LANGUAGES:
        raise ValueError(f"{source} {text!r}: must be one of {', '.join(LANGUAGES)}")
    return code


def _from_locale_name(name: str) -> str:
    return "zh" if name.lower().startswith("zh") else "en"


def language_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """FFN_LANG if set; otherwise the locale, as GNU gettext reads it: the first of LC_ALL,
    LC_MESSAGES, LANG that is set names the locale, `C`/`POSIX` means English (LANGUAGE is
    ignored there, as gettext does), else LANGUAGE's first entry if set, else that locale."""
    env = os.environ if environ is None else environ
    chosen = env.get("FFN_LANG", "").strip()
    if chosen:
        return parse_language(chosen, "FFN_LANG")
    locale_name = next((env[v] for v in _LOCALE_VARIABLES if env.get(v, "").strip()), "")
    if locale_name.split(".")[0] in ("C", "POSIX"):
        return "en"
    listed = [p for p in env.get("LANGUAGE", "").split(":") if p.strip()]
    if listed:
        return _from_locale_name(listed[0])
    return _from_locale_name(locale_name)


@cache
def _translations(lang: str) -> gettext.NullTranslations:
    if lang == "en":
        return gettext.NullTranslations()
    compiled = LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"
    if compiled.exists():
        return gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[lang])
    from ffn_cli.catalog import mo_bytes, read_po  # a source checkout: compile the .po now

    source = compiled.with_suffix(".po")
    return gettext.GNUTranslations(io.BytesIO(mo_bytes(read_po(source.read_text(encoding="utf-8"), str(source)))))


def set_language(lang: str | None = None) -> str:
    """Speak `lang` ('en', 'zh', or a locale name) from now on; None: what the environment says."""
    code = language_from_environment() if lang is None else parse_language(lang)
    _State.translations = _translations(code)
    _State.language = code
    return code


def language() -> str:
    _current()
    return _State.language


def _(message: str) -> str:
    """The message in the current language (the English id itself where no translation exists)."""
    return _current().gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return _current().ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Marks a message for the catalog without translating it: `_()` translates it where shown."""
    return message


class Message(str):
    """A text built now and shown later. As a str it is the English (what `--json` carries, what
    `in` and `==` see); `shown()` is the current language. The id is marked with N_() where it is
    written; arguments that are Messages are shown in the same language, and `Message.join`
    concatenates parts (a part's id carries its own leading punctuation, ', fused qkv', so each
    language punctuates its own way)."""

    msgid: str
    parts: tuple[str, ...]
    args: dict[str, object]

    def __new__(cls, msgid: str = "", /, *, parts: tuple[str, ...] = (), **args: object) -> Message:
        self = super().__new__(cls, _fill(msgid, parts, args, translate=False))
        self.msgid, self.parts, self.args = msgid, parts, args
        return self

    # A constructor (Message.join(a, b)), not str.join: the parts are kept, each said in the reader's language.
    @classmethod
    def join(cls, *parts: str) -> Message:  # type: ignore[override]
        return cls(parts=tuple(p for p in parts if p))

    @classmethod
    def listed(cls, items: Sequence[str]) -> Message:
        """Items one after another: ", " between them in English, "、" in Chinese (each item a name
        shown as it is, or a Message said in the reader's language)."""
        return cls.join(*items[:1], *(cls(N_(", {what}"), what=item) for item in items[1:]))

    @classmethod
    def separated(cls, items: Sequence[str]) -> Message:
        """Items one after another, "; " between them (each said in the reader's language)."""
        return cls.join(*items[:1], *(part for item in items[1:] for part in (cls(N_("; ")), item)))

    @classmethod
    def of(cls, msgid: str, /, **args: object) -> Message:
        """Message(msgid, **args), by another name."""
        return cls(msgid, parts=(), **args)

    def __add__(self, other: str) -> Message:
        """Words after words: still a Message, so each part is said in the reader's language."""
        return Message.join(self, other)

    def shown(self) -> str:
        return _fill(self.msgid, self.parts, self.args, translate=True)

    def __reduce__(self) -> tuple[object, ...]:
        # A rank sends its results to the launcher pickled: the id and values travel, not only the English.
        return (_rebuild, (self.msgid, self.parts, self.args))


def _rebuild(msgid: str, parts: tuple[str, ...], args: dict[str, object]) -> Message:
    return Message(msgid, parts=parts, **args)


def _fill(msgid: str, parts: tuple[str, ...], args: dict[str, object], *, translate: bool) -> str:
    def one(value: object) -> object:
        return (value.shown() if translate else str.__str__(value)) if isinstance(value, Message) else value

    if parts:
        return "".join(str(one(p)) for p in parts)
    text = _(msgid) if translate else msgid
    return text.format(**{k: one(v) for k, v in args.items()}) if args else text


# A space between two Chinese characters: what a translation's spacing around a Latin name leaves
# when the name is said in Chinese too.
_SPACE_IN_CHINESE = re.compile(r"(?<=[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]) (?=[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef])")


def tidy(text: str) -> str:
    """Text whose spaces stand only where its language puts them: none between Chinese characters."""
    return _SPACE_IN_CHINESE.sub("", text)


def shown(text: str) -> str:
    """A Message in the current language; a plain string (data: a name, a shape) as it is."""
    return text.shown() if isinstance(text, Message) else text
