"""Names from the user's code (a class, a submodule, a parameter) and from files (config.json's
modules_to_not_convert) reach the terminal spelled out: an escape sequence, a terminal title, a
bidi override or markup in one is printed as its Python escape, never acted on, and an `--svg`
of it is valid XML. `--json` keeps the names as they are."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from ffn_cli.cli import app

CLEAR, TITLE, BIDI, MARKUP = "\x1b[2J", "\x1b]0;x\x07", "\u202e", "[/]"
RAW = ("\x1b", "\x07", "\u202e")
# Each name as the module holds it, and as the terminal must show it.
UP, ACT, DOWN, SCALE, CLASS = f"up{CLEAR}", f"act{TITLE}", f"down{BIDI}", f"scale{CLEAR}", f"Evil{CLEAR}{TITLE}{BIDI}"
SHOWN = {
    UP: "up\\x1b[2J",
    ACT: "act\\x1b]0;x\\x07",
    DOWN: "down\\u202e",
    SCALE: "scale\\x1b[2J",
    CLASS: "Evil\\x1b[2J\\x1b]0;x\\x07\\u202e",
}

MODULE_FILE = f"""
import torch
from torch import nn

def _init(self, d=8):
    nn.Module.__init__(self)
    self.add_module({UP!r}, nn.Linear(d, 16))
    self.add_module({ACT!r}, nn.GELU())
    self.add_module({DOWN!r}, nn.Linear(16, d))
    self.register_parameter({SCALE!r}, nn.Parameter(torch.ones(d)))

def _forward(self, x):
    h = getattr(self, {ACT!r})(getattr(self, {UP!r})(x))
    return getattr(self, {DOWN!r})(h) * getattr(self, {SCALE!r})

Evil = type({CLASS!r}, (nn.Module,), {{"__init__": _init, "forward": _forward}})
"""


@pytest.fixture
def evil_file(tmp_path: Path) -> Path:
    # A name of its own per test: one process imports each module name once.
    path = tmp_path / f"evil_{abs(hash(str(tmp_path)))}.py"
    path.write_text(MODULE_FILE)
    return path


def _assert_spelled_out(text: str, names: tuple[str, ...] = (UP, ACT, DOWN, SCALE)) -> None:
    for ch in RAW:
        assert ch not in text, (ch, text)
    for name in names:
        assert SHOWN[name] in text, (SHOWN[name], text)


VIEWS = [[], ["--ops"], ["--explain"], ["--values", "2"], ["--backward"], ["--backward", "--explain"]]


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: " ".join(v) or "steps")
def test_names_in_a_user_module_are_spelled_out(runner: CliRunner, evil_file: Path, tmp_path: Path, view: list[str]) -> None:
    svg = tmp_path / "trace.svg"
    result = runner.invoke(app, ["trace", "--module", f"{evil_file}:Evil", *view, "--svg", str(svg)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    _assert_spelled_out(result.stdout, (UP, DOWN) if "--ops" in view else (UP, ACT, DOWN, SCALE))
    assert SHOWN[CLASS] in result.stdout
    ET.parse(svg)  # \x1b and \x07 are not XML characters: written raw, the file would not parse


@pytest.mark.parametrize("columns", ["80", "60"])
def test_names_are_spelled_out_at_every_width(runner: CliRunner, evil_file: Path, columns: str) -> None:
    result = runner.invoke(app, ["trace", "--module", f"{evil_file}:Evil", "--backward"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    _assert_spelled_out(result.stdout)


def test_json_keeps_the_names_as_they_are(runner: CliRunner, evil_file: Path) -> None:
    result = runner.invoke(app, ["trace", "--module", f"{evil_file}:Evil", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [s["name"] for s in data["steps"]][:3] == [UP, ACT, DOWN]
    assert data["module"]["class"] == CLASS


def _rendered(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(renderable)
    return out.getvalue()


def test_the_python_api_renders_them_spelled_out() -> None:
    import torch
    from torch import nn

    import ffn_cli

    def forward(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return getattr(self, DOWN)(getattr(self, ACT)(getattr(self, UP)(x))) * getattr(self, SCALE)

    module = type(CLASS, (nn.Module,), {"forward": forward})()
    module.add_module(UP, nn.Linear(8, 16))
    setattr(module, ACT, nn.ReLU())
    module.add_module(DOWN, nn.Linear(16, 8))
    module.register_parameter(SCALE, nn.Parameter(torch.ones(8)))
    result = ffn_cli.trace(module, backward=True)
    _assert_spelled_out(_rendered(result))
    assert result.to_dict()["steps"][0]["name"] == UP


def test_markup_in_a_name_is_printed_as_written() -> None:
    from torch import nn

    import ffn_cli

    module = type(f"{MARKUP}[bold]Odd", (nn.Module,), {"forward": lambda self, x: getattr(self, "[red]b[/red]")(self.a(x))})()
    module.a = nn.Linear(8, 8)
    module.add_module("[red]b[/red]", nn.Linear(8, 8))
    shown = _rendered(ffn_cli.trace(module))
    assert "[red]b[/red]" in shown and f"{MARKUP}[bold]Odd" in shown, shown


MODULES_NOT_CONVERTED = {"quant_method": "fp8", "modules_to_not_convert": [f"lm_head{CLEAR}", f"odd{TITLE}{BIDI}"]}
CONFIG = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4}


def test_modules_to_not_convert_from_a_config_are_spelled_out(runner: CliRunner, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**CONFIG, "vocab_size": 100, "quantization_config": MODULES_NOT_CONVERTED}))
    result = runner.invoke(app, ["params", "--config", str(config), "--gpu", "h100"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for ch in RAW:
        assert ch not in result.stdout, result.stdout
    assert "odd\\x1b]0;x\\x07\\u202e" in result.stdout, result.stdout
    data = json.loads(runner.invoke(app, ["params", "--config", str(config), "--json"]).stdout)
    assert data["checkpoint"]["note"].endswith(f"odd{TITLE}{BIDI}")


def test_a_model_counted_by_building_it_prints_its_name_as_written(runner: CliRunner, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from ffn_cli.configs import meta_build
    from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES
    from tests.tiny_families import FAMILIES, tiny_config

    model_type = next((t for t in FAMILIES if t not in SUPPORTED_MODEL_TYPES and meta_build.knows(t)), None)
    if model_type is None:
        pytest.skip("this transformers builds no family that no reader knows")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**tiny_config(model_type), "_name_or_path": f"{MARKUP}odd{CLEAR}{BIDI}"}))
    result = runner.invoke(app, ["params", "--config", str(config)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"{MARKUP}odd\\x1b[2J\\u202e · {model_type}" in result.stdout, result.stdout


def test_the_walk_by_hand() -> None:
    """Every string of a nested value spelled out; what holds none comes back as the same object."""
    from dataclasses import dataclass
    from typing import NamedTuple

    from ffn_cli.i18n import Message
    from ffn_cli.render.literal import visible_strings

    class Pair(NamedTuple):
        name: str
        count: int

    @dataclass(frozen=True)
    class Step:
        name: str
        pairs: tuple[Pair, ...]
        note: Message
        extra: dict[str, list[str]]

    plain = Step("up", (Pair("w", 1),), Message("{n} rows", n="x"), {"k": ["v"]})
    assert visible_strings(plain) is plain
    odd = Step(UP, (Pair(DOWN, 2),), Message("{n} rows", n=ACT), {SCALE: [CLASS]})
    shown = visible_strings(odd)
    assert shown == Step(SHOWN[UP], (Pair(SHOWN[DOWN], 2),), Message("{n} rows", n=SHOWN[ACT]), {SHOWN[SCALE]: [SHOWN[CLASS]]})
    assert shown.note.shown() == f"{SHOWN[ACT]} rows" and odd.name == UP  # the original is left as it was
