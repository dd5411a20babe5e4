"""The language of a run: --lang, then FFN_LANG, then the locale as gettext reads it; a language
ffn does not speak is one line and exit 2; a stream that cannot show Chinese gets English; the
Chinese --help is whole at 60 and 80 columns."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.i18n import _, set_language

# An error every run can give, in a line the catalog translates: its opening word tells the language.
# `ffn params` never imports torch: each run is a fraction of a second.
_BAD_BATCH = ["params", "--d-model", "0"]
_LOCALE_VARIABLES = ("FFN_LANG", "LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE", "PYTHONIOENCODING")


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """`ffn ARGS` in a fresh process whose locale variables are only those given."""
    base = {k: v for k, v in os.environ.items() if k not in _LOCALE_VARIABLES}
    return subprocess.run(
        [sys.executable, "-m", "ffn_cli", *args],
        env={**base, "PYTHONUTF8": "0", **env},
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=120,
    )


def _language(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: "), line  # in both languages: what a script matches
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in line) else "en"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "C"}, "en"),
        ({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, "en"),
        ({"LC_ALL": "C", "LANGUAGE": "zh"}, "en"),  # C means English: gettext ignores LANGUAGE there
        ({"LANG": "en_US.UTF-8", "LANGUAGE": "zh_CN:en"}, "zh"),  # else LANGUAGE's first entry
        ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LC_ALL": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}, "en"),
        ({"FFN_LANG": "zh", "LANG": "C"}, "zh"),
        ({"FFN_LANG": "en", "LANG": "zh_CN.UTF-8"}, "en"),
        ({}, "en"),
    ],
)
def test_the_environment_chooses_the_language(env: dict[str, str], expected: str) -> None:
    assert _language(_run(_BAD_BATCH, **env)) == expected


def test_the_locale_speaks_chinese_in_a_trace() -> None:
    """`LANG=zh_CN.UTF-8 ffn trace`, nothing else asked: the trace's own words are Chinese."""
    result = _run(["trace"], LANG="zh_CN.UTF-8")
    assert result.returncode == 0 and "形状流" in result.stdout and "Shape flow" not in result.stdout, result.stderr
    c = _run(["params"], LC_ALL="C", LANG="zh_CN.UTF-8")  # LC_ALL first, as gettext reads it: C is English
    assert c.returncode == 0 and c.stdout.splitlines()[1].split()[0] == "tensor", c.stdout


def test_the_locale_speaks_chinese_in_the_help_too() -> None:
    result = _run(["trace", "--help"], LANG="zh_CN.UTF-8")
    assert result.returncode == 0 and "用法：" in result.stdout and "Usage:" not in result.stdout


@pytest.mark.parametrize("where", ["first", "last"])
def test_lang_beats_ffn_lang_and_the_locale(where: str) -> None:
    args = ["--lang", "en", *_BAD_BATCH] if where == "first" else [*_BAD_BATCH, "--lang=en"]
    assert _language(_run(args, FFN_LANG="zh", LANG="zh_CN.UTF-8")) == "en"
    assert _language(_run(["--lang", "zh", *_BAD_BATCH], FFN_LANG="en", LANG="C")) == "zh"


@pytest.mark.parametrize(
    ("args", "env", "named"), [(["--lang", "fr", "trace"], {}, "--lang 'fr'"), (["trace"], {"FFN_LANG": "fr"}, "FFN_LANG 'fr'")]
)
def test_a_language_ffn_does_not_speak_is_one_line(args: list[str], env: dict[str, str], named: str) -> None:
    result = _run(args, **env)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and named in result.stderr and "en, zh" in result.stderr, result.stderr


def test_a_bad_ffn_lang_is_said_in_the_locales_language() -> None:
    result = _run(["trace"], FFN_LANG="fr", LANG="zh_CN.UTF-8")
    assert result.returncode == 2 and result.stderr.startswith("error: FFN_LANG 'fr'"), result.stderr


@pytest.mark.parametrize(
    "env",
    [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"}, {"PYTHONIOENCODING": "ascii", "LANG": "C", "LC_ALL": "C"}],
)
def test_chinese_on_a_stream_that_cannot_show_it_is_english(env: dict[str, str]) -> None:
    """--lang zh, or a Chinese locale, on an ASCII (or Latin-1) stream: English and a note, never
    a UnicodeEncodeError or a line of question marks."""
    for args in (["--lang", "zh", *_BAD_BATCH], ["--lang", "zh", "--help"], _BAD_BATCH):
        result = _run(args, LANG=env.get("LANG", "zh_CN.UTF-8"), **{k: v for k, v in env.items() if k != "LANG"})
        assert "Traceback" not in result.stderr and "?" * 3 not in result.stdout + result.stderr, result.stderr
        notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
        asked_chinese = "--lang" in args or env.get("LC_ALL") != "C"
        assert len(notes) == (1 if asked_chinese else 0), result.stderr
        if args[-1] == "--help":
            assert result.returncode == 0 and "Usage:" in result.stdout
        else:
            assert _language(result) == "en"


def test_ascii_c_locale_stays_english_without_a_note() -> None:
    result = _run(_BAD_BATCH, LC_ALL="C", LANG="C", PYTHONIOENCODING="ascii")
    assert _language(result) == "en" and "note:" not in result.stderr


@pytest.mark.parametrize("width", [80, 120])
def test_a_chinese_error_matches_golden(golden, width: int) -> None:  # type: ignore[no-untyped-def]
    """A long error stays one line at any width (the terminal wraps it), in Chinese as in English."""
    result = _run(["--lang", "zh", "trace", "--variant", "swigl"], COLUMNS=str(width))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    golden(f"error_zh_variant_{width}.txt", result.stderr)


def _panel_texts(output: str) -> list[str]:
    """Each panel's description column, its lines joined, whitespace removed."""
    panels: list[str] = []
    current: list[str] | None = None
    for line in output.splitlines():
        if line.startswith("╭"):
            current = []
        elif line.startswith("╰") and current is not None:
            panels.append("".join(current))
            current = None
        elif current is not None:
            inner = line.strip("│").rstrip()
            # ' --name <type>   description' or '                 more description'
            found = re.match(r"^ (?:\S+(?: \S+)*(?= {2,}|$))?\s*(.*)$", inner)
            assert found is not None, line
            current.append(re.sub(r"\s+", "", found.group(1)))
    return panels


def _expected(command, ctx) -> list[str]:  # type: ignore[no-untyped-def]
    """The Chinese description of every option (and of every command, for a group)."""
    texts = [_(inspect.cleandoc(p.help)) for p in command.get_params(ctx) if p.help and not getattr(p, "hidden", False)]
    if hasattr(command, "list_commands"):
        texts += [_(inspect.cleandoc(command.get_command(ctx, n).help).split("\n\n")[0]) for n in command.list_commands(ctx)]
    return [re.sub(r"\s+", "", re.sub(r"\[/?[a-z ]*\]", "", t)) for t in texts]


@pytest.mark.parametrize("width", [60, 80])
@pytest.mark.parametrize("args", [["--help"], ["trace", "--help"]])
def test_the_chinese_help_is_whole(runner: CliRunner, args: list[str], width: int) -> None:
    """Every option and its whole description, every line within the width, nothing cropped."""
    import click
    import typer

    result = runner.invoke(app, ["--lang", "zh", *args], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    output = result.stdout
    assert "用法：" in output and "…" not in output
    assert all(cell_len(line) <= width for line in output.splitlines()), max(output.splitlines(), key=cell_len)
    group = typer.main.get_command(app)
    root = click.Context(group, info_name="ffn")
    command, ctx = (
        (group, root)
        if args == ["--help"]
        else (group.get_command(root, "trace"), click.Context(group.get_command(root, "trace"), info_name="trace", parent=root))
    )
    set_language("zh")
    names = [
        o for p in command.get_params(ctx) if not getattr(p, "hidden", False) for o in [*p.opts, *p.secondary_opts] if o.startswith("--")
    ]
    assert all(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", output) for n in names)
    shown = "".join(_panel_texts(output))
    missing = [text for text in _expected(command, ctx) if text not in shown]
    assert not missing, missing
