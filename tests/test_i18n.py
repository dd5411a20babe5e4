"""Which language ffn speaks: --lang, FFN_LANG, then the locale as GNU gettext reads it; the
Python API switches with set_language and renders a result made before in the new language."""

from __future__ import annotations

import pytest

import ffn_cli
from ffn_cli.i18n import _, language, language_from_environment, parse_language, set_language


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "en"),
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "zh_TW"}, "zh"),
        ({"LANG": "en_US.UTF-8"}, "en"),
        ({"LANG": "C"}, "en"),
        ({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, "en"),  # LC_ALL first
        ({"LC_ALL": "C.UTF-8", "LANGUAGE": "zh_CN"}, "en"),  # LANGUAGE is ignored under C, as gettext does
        ({"LC_ALL": "POSIX", "LANGUAGE": "zh"}, "en"),
        ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LANGUAGE": "zh_CN:en", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LANGUAGE": "en:zh", "LANG": "zh_CN.UTF-8"}, "en"),
        ({"FFN_LANG": "zh", "LANG": "C"}, "zh"),
        ({"FFN_LANG": "en", "LANG": "zh_CN.UTF-8"}, "en"),
    ],
)
def test_language_from_the_environment(environ: dict[str, str], expected: str) -> None:
    assert language_from_environment(environ) == expected


@pytest.mark.parametrize("text", ["fr", "", "zz_ZZ", "chinese"])
def test_a_language_ffn_does_not_speak_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="must be one of en, zh"):
        parse_language(text)


def test_the_api_switches_language_and_renders_an_old_result_anew() -> None:
    result = ffn_cli.params("llama-2-7b")
    english = str(result)
    assert ffn_cli.set_language("zh_CN.UTF-8") == "zh" and language() == "zh"
    chinese = str(result)
    assert chinese != english and any("\u4e00" <= ch <= "\u9fff" for ch in chinese)
    assert result.to_dict() == ffn_cli.params("llama-2-7b").to_dict()
    set_language("en")
    assert str(result) == english


def test_a_message_with_no_translation_is_its_english_id() -> None:
    set_language("zh")
    assert _("a message no catalog holds") == "a message no catalog holds"
