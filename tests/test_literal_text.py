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


PAYLOAD = "\x1b[2Jevil[bold red]x[/]"
# Every view a config reaches: its counts, the FFN share over lengths, a comparison, its layer
# traced alone and in its block, and the picture of it.
VIEWS = [
    ["params"],
    ["params", "--seq-len", "512,4096"],
    ["params", "--json"],
    ["trace", "--device", "meta"],
    ["trace", "--block", "--device", "meta"],
    ["bench", "--repeats", "2", "--warmup-ms", "1", "-b", "1", "-s", "2", "--d-ff", "32"],
]


def _poisoned(config: dict[str, object]) -> dict[str, object]:
    """Every string of the config but model_type, with markup and a terminal escape appended."""
    return {k: (v + PAYLOAD if isinstance(v, str) and k != "model_type" else v) for k, v in config.items()}


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: " ".join(v[:2]))
@pytest.mark.parametrize("field", ["hidden_act", "_name_or_path", "torch_dtype"])
def test_every_string_of_a_config_prints_literally_in_every_view(runner: CliRunner, tmp_path: Path, view: list[str], field: str) -> None:
    """An unknown activation, a name, a dtype: whatever a view prints of them is spelled out, never
    interpreted, and an svg of it is valid XML."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(_poisoned({**CONFIG, "vocab_size": 100, "hidden_act": "silu", "torch_dtype": "float32", field: PAYLOAD})))
    svg = tmp_path / "view.svg"
    result = runner.invoke(
        app, [*view, "--config", str(config), *(["--svg", str(svg)] if view[0] == "trace" else [])], env={"COLUMNS": "200"}
    )
    out = result.stdout + result.stderr
    assert "\x1b" not in out, out
    if "evil" in out:
        assert "\\x1b[2Jevil[bold red]x[/]" in out or "\\u001b[2Jevil[bold red]x[/]" in out, out
    if result.exit_code != 0:
        assert len(out.strip().splitlines()) == 1, out
    elif svg.exists():
        import xml.etree.ElementTree as ET

        ET.parse(svg)
