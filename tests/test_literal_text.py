"""Text from files, paths and model names reaches the terminal exactly as written: markup is not
parsed, control characters are spelled out, and nothing crashes the renderer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.text import Text
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.render.literal import literal, visible

CONFIG = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4}
NAMES = {
    "[/]oops": "[/]oops",
    "[bold red on white]X[/] [link=https://example.com]click[/link]": "[bold red on white]X[/] [link=https://example.com]click[/link]",
    "\x1b[2J\x1b]0;title\x07": "\\x1b[2J\\x1b]0;title\\x07",
    "left\u202eright\nnext": "left\\u202eright\\nnext",
}


@pytest.mark.parametrize(("name", "shown"), list(NAMES.items()), ids=["close-tag", "styles-and-link", "escapes", "bidi-newline"])
def test_a_model_name_from_a_config_prints_literally(runner: CliRunner, tmp_path: Path, name: str, shown: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**CONFIG, "vocab_size": 100, "_name_or_path": name}))
    result = runner.invoke(app, ["params", "--config", str(config)])
    assert result.exit_code == 0, result.output
    words = " ".join(result.stdout.split())  # the title may wrap to the table's width
    assert words.startswith(" ".join(shown.split()) + " · llama · 2 layers"), result.stdout
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout


def test_a_model_directory_name_prints_literally(runner: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / "[blink]evil"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**CONFIG, "vocab_size": 100}))
    result = runner.invoke(app, ["params", "--config", str(folder)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("[blink]evil · llama")


def test_errors_show_control_characters_visibly(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["params", "--bogus\x1b[2J"])
    assert result.exit_code == 2
    assert "\x1b" not in result.stderr and "--bogus\\x1b[2J" in result.stderr
    assert result.stderr.count("\n") == 1
    result = runner.invoke(app, ["params", "--config", str(tmp_path / "a\nb\x1b[31m.json")])
    assert result.exit_code == 2 and "\x1b" not in result.stderr and result.stderr.count("\n") == 1


def test_the_helper_by_hand() -> None:
    assert visible("plain · 中文 ü") == "plain · 中文 ü"
    assert visible("a\tb\x00c\x9bd") == "a\\tb\\x00c\\x9bd"
    for text in ("[b]x[/b]", "[/]", "\x1b[1m", "a\\[link=x]y", "[@click]"):
        assert Text.from_markup(literal(text)).plain == visible(text)
