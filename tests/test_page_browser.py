"""`ffn trace --page` in a real browser: headless Chromium (the distribution's package; .ci/run
installs it) opens pages of a registry variant, a user module, a mixture and a Chinese run with
its backward, at 1280 and 390 pixels wide. The drawn DOM is held to the `--json` of the same
run: every step there, every shape on the arrows and in the panel as Python prints the tuples
of `--json`, the bars' drawn lengths in the ratio of the last dimensions, the routing's
tokens. A step is hovered and reached by keyboard, and the panel read. Each page is saved as
a screenshot to look at (in $FFN_PAGE_SCREENSHOTS, else pytest's temporary folder)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli.ffn_app import app
from tests.browser import Browser, BrowserError, find_chromium

pytestmark = pytest.mark.usefixtures("one_thread")

ROOT = Path(__file__).resolve().parent.parent
MY_FFN = ROOT / "docs" / "examples" / "my_ffn.py"
PAGES = {
    "relu": ["-v", "relu"],
    # The tutorial's module, from a file of a name of its own: a module loaded stays in sys.modules.
    "module": ["--module", "{tmp}/page_my_ffn.py:TransformerFFN(512, 2048)"],
    "moe": ["-v", "moe"],
    "zh-swiglu-backward": ["--lang", "zh", "-v", "swiglu", "--backward"],
}
WIDTHS = (1280, 390)
MAX_SHAPES = 3  # as the steps table: three distinct shapes, then "+N more"


@pytest.fixture(scope="module")
def browser() -> Any:
    if find_chromium() is None:
        pytest.skip("no Chromium to open the pages in: apt-get install chromium (.ci/run does), or set FFN_CHROMIUM")
    try:
        b = Browser.start()
    except BrowserError as exc:
        pytest.skip(f"Chromium did not start here: {exc}")
    yield b
    b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    named = os.environ.get("FFN_PAGE_SCREENSHOTS")
    folder = Path(named) if named else tmp_path_factory.mktemp("page-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _run(tmp_path: Path, args: list[str]) -> tuple[dict[str, Any], Path]:
    """One run: its --json --explain (English, whatever the page's language) and its page."""
    target = tmp_path / "page.html"
    result = CliRunner().invoke(app, ["trace", *args, "--json", "--explain", "--page", str(target)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), target


def _shape_lines(shapes: list[list[int]]) -> list[str]:
    distinct = list(dict.fromkeys(str(tuple(s)) for s in shapes))
    more = [f"+{len(distinct) - MAX_SHAPES} more"] if len(distinct) > MAX_SHAPES else []
    return distinct[:MAX_SHAPES] + more


def _outputs(step: dict[str, Any]) -> list[list[int]]:
    return step["output_shapes"] if len(step["output_shapes"]) > 1 else [step["output_shape"]]


DRAWN = """Array.from(document.querySelectorAll('.cell')).map(c => {
  const n = c.querySelector('[data-node]'), bar = n.querySelector(':scope .bar');
  return {key: n.dataset.node, name: n.querySelector('.head .name').textContent,
          out: Array.from(c.querySelectorAll(':scope > .arrow [data-shape=out]')).map(e => e.textContent),
          bar: bar.getBoundingClientRect().width, row: c.closest('.row').className};
})"""

PANEL = """Array.from(document.querySelectorAll('.detail')).map(d => ({
  key: d.dataset.for,
  inputs: Array.from(d.querySelectorAll('[data-shape=in]')).map(e => e.textContent),
  outputs: Array.from(d.querySelectorAll('[data-shape=out]')).map(e => e.textContent),
  flops: (d.querySelector('.flops') || {}).textContent || null,
}))"""

SHOWN = "Array.from(document.querySelectorAll('.detail')).filter(d => !d.hidden).map(d => d.dataset.for)"


def _png_width(path: Path) -> int:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">I", head[16:20])[0]


@pytest.mark.parametrize("name", list(PAGES))
def test_the_page_in_a_browser(browser: Browser, shots: Path, tmp_path: Path, name: str) -> None:
    (tmp_path / "page_my_ffn.py").write_text(MY_FFN.read_text(encoding="utf-8"), encoding="utf-8")
    data, page = _run(tmp_path, [a.format(tmp=tmp_path) for a in PAGES[name]])
    steps = data["steps"]
    for width in WIDTHS:
        browser.open(page, width=width)
        assert browser.evaluate("document.documentElement.lang") == ("zh" if "zh" in name else "en")
        assert browser.evaluate("JSON.parse(document.getElementById('ffn-trace').textContent)") == data
        # Every step drawn, named and with its output shapes on its arrow, as --json has them.
        drawn = {d["key"]: d for d in browser.evaluate(DRAWN)}
        assert [drawn[f"s{i}"]["name"] for i in range(len(steps))] == [s["name"] for s in steps]
        assert drawn["input"]["out"] == [str(tuple(data["input_shape"]))]
        for i, s in enumerate(steps):
            assert drawn[f"s{i}"]["out"] == _shape_lines(_outputs(s)), s["name"]
        # The panel's shapes and FLOPs for every step.
        panel = {d["key"]: d for d in browser.evaluate(PANEL)}
        for i, s in enumerate(steps):
            assert panel[f"s{i}"]["inputs"] == _shape_lines(s["input_shapes"]), s["name"]
            assert panel[f"s{i}"]["outputs"] == _shape_lines(_outputs(s)), s["name"]
            assert panel[f"s{i}"]["flops"] == f"{s['flops']:,}", s["name"]
        for i, s in enumerate(data.get("backward_steps", [])):
            assert panel[f"b{i}"]["inputs"] == _shape_lines(s["grad_in"]) and panel[f"b{i}"]["flops"] == f"{s['flops']:,}"
        # The bars of the lane's own rows, drawn in the ratio of the outputs' last dimensions.
        lane = [(drawn[f"s{i}"]["bar"], s["output_shape"][-1]) for i, s in enumerate(steps) if "experts" not in drawn[f"s{i}"]["row"]]
        lane.append((drawn["input"]["bar"], data["input_shape"][-1]))
        widest_px, widest = max(lane, key=lambda pair: pair[1])
        for px, dim in lane:
            assert px == pytest.approx(max(widest_px * dim / widest, 3), abs=1.5)
        # Nothing wider than the window: a phone scrolls down, never sideways.
        assert browser.evaluate("document.documentElement.scrollWidth") <= width
        _hover_and_read(browser, data, name)
        browser.screenshot(shots / f"{name}-{width}.png")
        # What a phone shows: the panel held at the bottom of the screen, over the steps.
        browser.screenshot(shots / f"{name}-{width}-screen.png", whole=False)
        assert _png_width(shots / f"{name}-{width}.png") == _png_width(shots / f"{name}-{width}-screen.png") == width


def _hover_and_read(browser: Browser, data: dict[str, Any], name: str) -> None:
    """The mouse on a step shows its article alone; the keyboard moves from step to step."""
    steps = data["steps"]
    k = next(i for i, s in enumerate(steps) if s["params"])  # a step with weights: the panel has the most to say
    browser.hover(f"#ffn-s{k}")
    assert browser.evaluate(SHOWN) == [f"s{k}"]
    detail = f"document.getElementById('ffn-d-s{k}')"
    assert browser.evaluate(f"{detail}.querySelector('.name').textContent") == steps[k]["name"]
    assert browser.evaluate(f"{detail}.querySelector('.params').textContent") == f"{steps[k]['param_count']:,}"
    why = browser.evaluate(f"{detail}.querySelector('.why').textContent")
    if "zh" in name:
        assert any("\u4e00" <= ch <= "\u9fff" for ch in why)  # said in Chinese; --json keeps the English
    else:
        assert why == steps[k]["explanation"]
    assert browser.evaluate(f"{detail}.querySelectorAll('svg.hist rect').length") == 20
    browser.evaluate("document.getElementById('ffn-input').focus()")
    browser.press("ArrowDown")
    assert browser.evaluate("document.activeElement.dataset.node") == "s0"
    assert browser.evaluate(SHOWN) == ["s0"]


def test_the_routing_is_drawn(browser: Browser, tmp_path: Path) -> None:
    data, page = _run(tmp_path, ["-v", "moe", "--seed", "3"])
    browser.open(page, width=1280)
    dispatch = next(i for i, s in enumerate(data["steps"]) if "tokens_per_expert" in s)
    drawn = browser.evaluate(f"Array.from(document.querySelectorAll('#ffn-s{dispatch} .tokens li')).map(li => Number(li.dataset.tokens))")
    assert drawn == data["steps"][dispatch]["tokens_per_expert"]
    experts = browser.evaluate("Array.from(document.querySelectorAll('.row.experts .node')).map(n => n.dataset.name)")
    assert experts == [s["name"] for s in data["steps"] if s.get("substeps")]


# Each text box the panel and the boxes hold, with its lines as the browser drew them: the
# rectangles of each text node's line boxes, one per line.
LINES = """Array.from(document.querySelectorAll(arguments_selector)).map(e => {
  const range = document.createRange(); range.selectNodeContents(e);
  const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
  return {text: e.textContent, lines: tops.size};
})"""


def _lines(browser: Browser, selector: str) -> list[dict[str, Any]]:
    return browser.evaluate(LINES.replace("arguments_selector", json.dumps(selector)))  # type: ignore[no-any-return]


@pytest.mark.parametrize("width", [1280, 900, 390])
def test_an_experts_panel_keeps_its_table_whole_and_its_names_unbroken(browser: Browser, tmp_path: Path, width: int) -> None:
    """Hovering an expert shows its steps' table inside the panel (nothing cut at its edge), each
    step's name, shape and count on one line."""
    data, page = _run(tmp_path, ["-v", "moe"])
    browser.open(page, width=width)
    expert = next(i for i, s in enumerate(data["steps"]) if s.get("substeps"))
    browser.hover(f"#ffn-s{expert}")
    detail = f"#ffn-d-s{expert}"
    sizes = browser.evaluate(
        f"(() => {{ const t = document.querySelector('{detail} table.partlist'), p = document.getElementById('ffn-panel');"
        " return {table: t.getBoundingClientRect().right, panel: p.getBoundingClientRect().right,"
        " scroll: p.scrollWidth, room: p.clientWidth}; })()"
    )
    assert sizes["table"] <= sizes["panel"] and sizes["scroll"] <= sizes["room"], sizes
    for cell in _lines(browser, f"{detail} .partlist .nobr, {detail} .partlist .shape, {detail} .shape"):
        assert cell["lines"] == 1, cell  # the hovered article is shown: every piece of it drawn
    names = [c["text"] for c in _lines(browser, f"{detail} .partlist tbody td:first-child")]
    assert "activation" in names


@pytest.mark.parametrize("width", [1280, 390])
def test_no_shape_or_name_in_a_formula_breaks_on_the_page(browser: Browser, tmp_path: Path, width: int) -> None:
    """A step's formula breaks at its spaces or after a `·`, a weight's shape never: no
    `W_g` / `ate·x`, no `(2048,` / `512)`."""
    _data, page = _run(tmp_path, ["-v", "swiglu", "--block"])
    browser.open(page, width=width)
    for piece in _lines(browser, ".lane .wshape, .lane .shape, .lane .op .nobr"):
        assert piece["lines"] == 1, piece
    words = browser.evaluate(
        """Array.from(document.querySelectorAll('.op')).flatMap(op => {
          const range = document.createRange(), text = op.textContent, out = [];
          // each identifier (W_gate, d_h) drawn on one line
          for (const m of text.matchAll(/[A-Za-z_]\\w+/g)) {
            const walker = document.createTreeWalker(op, NodeFilter.SHOW_TEXT); let offset = 0, node;
            while ((node = walker.nextNode())) {
              const end = offset + node.length;
              if (m.index >= offset && m.index + m[0].length <= end) {
                range.setStart(node, m.index - offset); range.setEnd(node, m.index - offset + m[0].length);
                out.push({word: m[0], lines: new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size});
              }
              offset = end;
            }
          }
          return out;
        })"""
    )
    assert words and not [w for w in words if w["lines"] > 1]
