"""`ffn trace --page`: the page is drawn from the run's `--json`, embeds it whole, escapes what
it did not write, fetches nothing, and its histograms are the real values' (numpy.histogram of
the tensor computed again here). The browser checks are in tests/test_page_browser.py."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli.ffn_app import app
from ffn_cli.render.page import script_json
from ffn_cli.tracing.result import HISTOGRAM_BINS
from tests.data import articles

pytestmark = pytest.mark.usefixtures("one_thread")

WIDE = {"COLUMNS": "120"}


class _Page(HTMLParser):
    """The page's scripts by id, and the text of every element carrying data-shape, by role."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: dict[str, str] = {}
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._script: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "script":
            self._script = a.get("id") or ""
            self.scripts[self._script] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts[self._script] += data


def parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


def run_page(runner: CliRunner, tmp_path: Path, *args: str) -> tuple[dict, str]:
    """One run: its --json --explain on stdout, its page on disk."""
    target = tmp_path / "run.html"
    result = runner.invoke(app, ["trace", *args, "--json", "--explain", "--page", str(target)], env=WIDE)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), target.read_text(encoding="utf-8")


def test_script_json_cannot_end_its_script() -> None:
    data = {"name": "</script><!-- <script>alert(1)</script> & \u2028 -->", "n": [1, 2.5, None]}
    text = script_json(data)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == data


def test_the_page_embeds_the_json_of_its_run(runner: CliRunner, tmp_path: Path) -> None:
    data, text = run_page(runner, tmp_path, "--lang", "en", "-v", "swiglu", "--backward")
    page = parse(text)
    assert json.loads(page.scripts["ffn-trace"]) == data
    assert text.startswith("<!DOCTYPE html>") and '<html lang="en">' in text
    # One box per step and per backward step, by id; the steps' names as --json has them.
    ids = {a.get("id") for _t, a in page.tags}
    assert all(f"ffn-s{i}" in ids for i in range(len(data["steps"])))
    assert all(f"ffn-b{i}" in ids for i in range(len(data["backward_steps"])))
    names = [a["data-name"] for _t, a in page.tags if a.get("data-node", "").startswith("s") and "-" not in a["data-node"]]
    assert names == [s["name"] for s in data["steps"]]


def test_the_arrows_carry_the_shapes_of_json(runner: CliRunner, tmp_path: Path) -> None:
    data, text = run_page(runner, tmp_path, "--lang", "en")
    # The arrows in order: the input's, then each step's output, as Python prints a tuple.
    arrows = re.findall(r'<div class="arrow">.*?</div>', text)
    shapes = [re.findall(r'data-shape="out">([^<]*)<', a) for a in arrows]
    want = [[str(tuple(data["input_shape"]))]] + [[str(tuple(s["output_shape"]))] for s in data["steps"]]
    assert shapes == want


def test_nothing_is_fetched(runner: CliRunner, tmp_path: Path) -> None:
    _data, text = run_page(runner, tmp_path, "--lang", "en", "-v", "moe")
    assert not re.search(r"""(src|href)\s*=|url\(|@import|https?://""", text)


class _Named(nn.Module):
    """Names no tool wrote: markup, an entity, an ESC sequence, a right-to-left override."""

    def __init__(self) -> None:
        super().__init__()
        self.add_module("up<b>&amp;\x1b[31m\u202e", nn.Linear(8, 16))
        self.add_module("down</script>", nn.Linear(16, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return getattr(self, "down</script>")(torch.relu(getattr(self, "up<b>&amp;\x1b[31m\u202e")(x)))


def test_names_from_a_module_are_escaped() -> None:
    r = ffn_cli.trace(_Named(), torch.randn(1, 3, 8))
    text = r.page()
    assert "\x1b" not in text and "\u202e" not in text
    assert "<b>" not in text and "</script>" not in text.replace("</script>", "", text.count("<script"))
    # The name as ffn's other outputs print it: ESC and the override spelled out, markup escaped.
    assert "up&lt;b&gt;&amp;amp;\\x1b[31m\\u202e" in text
    page = parse(text)
    assert json.loads(page.scripts["ffn-trace"])["steps"][0]["name"] == "up<b>&amp;\x1b[31m\u202e"


def test_the_histograms_are_of_the_real_values() -> None:
    torch.manual_seed(0)
    module = articles.TransformerFFN(32, 64).eval()
    x = torch.randn(2, 5, 32)
    page = parse(ffn_cli.trace(module, x).page())
    histograms = json.loads(page.scripts["ffn-page"])["histograms"]
    steps = json.loads(page.scripts["ffn-trace"])["steps"]
    with torch.no_grad():  # the same module on the same input, step by step, again
        h = module.linear1(x)
        values = {"linear1": h, "activation": torch.relu(h), "linear2": module.linear2(torch.relu(h))}  # eval: no dropout
    for i, step in enumerate(steps):
        if step["name"] in values:
            a = values[step["name"]].double().numpy().ravel()
            counts, edges = np.histogram(a, bins=HISTOGRAM_BINS, range=(a.min(), a.max()))
            assert histograms[f"s{i}"] == {"counts": counts.tolist(), "edges": edges.tolist()}, step["name"]
    assert set(values) <= {s["name"] for s in steps}
    a = x.double().numpy().ravel()
    assert histograms["input"]["counts"] == np.histogram(a, bins=HISTOGRAM_BINS, range=(a.min(), a.max()))[0].tolist()


class _Scalar(nn.Module):
    """A loss-like module: its output is 0-d, a tensor with no last dimension."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(8, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(x).sum()


def test_a_0d_output_is_drawn_as_empty_shape(runner: CliRunner, tmp_path: Path) -> None:
    r = ffn_cli.trace(_Scalar(), torch.randn(2, 3, 8))
    for text in (r.page(), r._repr_html_()):
        # The output's arrow and bar say (), as Python prints a 0-d shape and the terminal's width chart does.
        assert 'data-shape="out">()<' in text and 'class="dim">()<' in text
        assert re.findall(r'class="dim">([^<]*)<', text)[:2] == ["8", "16"]
    (tmp_path / "scalar.py").write_text(
        "import torch\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.up = torch.nn.Linear(8, 16)\n    def forward(self, x):\n        return self.up(x).sum()\n",
        encoding="utf-8",
    )
    data, text = run_page(runner, tmp_path, "--module", f"{tmp_path / 'scalar.py'}:M", "-d", "8")
    assert data["output_shape"] == [] and 'data-shape="out">()<' in text


def test_the_chinese_page(runner: CliRunner, tmp_path: Path) -> None:
    data, text = run_page(runner, tmp_path, "--lang", "zh")
    assert '<html lang="zh">' in text and "前向传播" in text
    assert json.loads(parse(text).scripts["ffn-trace"]) == data  # --json stays English


def test_the_chinese_backward_page_says_what_the_table_says(runner: CliRunner, tmp_path: Path) -> None:
    # The lane's title read "dL/dy: random" (the --json key) and a row of steps side by side
    # "各自读取 input", where the table says 随机种子的正态分布 and 输入.
    _, text = run_page(runner, tmp_path, "--lang", "zh", "-v", "swiglu", "--backward")
    title = re.search(r'<section class="lane backward" aria-label="([^"]*)"', text)
    assert title is not None and "random" not in title.group(1) and "dL/dy" in title.group(1)
    steps = re.findall(r"各自读取 ([^<]*)<", text)
    assert steps and all("input" not in s for s in steps), steps
    _, english = run_page(runner, tmp_path, "--lang", "en", "-v", "swiglu", "--backward")
    assert "(dL/dy: seeded normal)" in english


def test_a_notebook_shows_the_drawing() -> None:
    r = ffn_cli.trace(articles.TransformerFFN(16, 32), torch.randn(1, 2, 16))
    first, second = r._repr_html_(), r._repr_html_()
    ids = lambda t: set(re.findall(r'id="([^"]+)"', t))  # noqa: E731
    assert 'class="ffn-page' in first and not ids(first) & ids(second)  # two cells, two sets of ids
    with pytest.raises(ffn_cli.FFNError, match="page"):
        ffn_cli.params(ffn_cli.FFNSpec("relu", 16)).page()


def test_page_writes_a_file(tmp_path: Path) -> None:
    target = tmp_path / "api.html"
    text = ffn_cli.trace(articles.TransformerFFN(16, 32), torch.randn(1, 2, 16)).page(str(target))
    assert target.read_text(encoding="utf-8") == text


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--page", "out.txt"], "--page"),
        (["--tp", "2", "--page", "out.html"], "--page"),
    ],
)
def test_bad_page_options_are_one_line(runner: CliRunner, tmp_path: Path, args: list[str], words: str) -> None:
    args = [str(tmp_path / a) if a.startswith("out.") else a for a in args]
    result = runner.invoke(app, ["trace", *args], env=WIDE)
    assert result.exit_code == 2 and result.stderr.startswith("error: ") and words in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())
