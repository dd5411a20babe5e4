"""The picture of a lane as HTML: a box per step with its bar to scale, the arrows between
steps labelled with shapes, the weights beside the step that reads them, a mixture's experts
side by side with the tokens each got. Every text from the run passes through `esc`."""

from __future__ import annotations

import html

from ffn_cli.i18n import _, ngettext
from ffn_cli.render.fit import UNBREAKABLE
from ffn_cli.render.format import fmt_count, fmt_shape, fmt_value
from ffn_cli.render.literal import visible
from ffn_cli.render.page.nodes import Histogram, Lane, Node, Weight

__all__ = ["Scale", "esc", "formula_html", "histogram_svg", "lane_html", "nobr"]

# The largest weight's longer side, in CSS pixels; its other side (and every other weight) to scale.
WEIGHT_PX = 88
# Least drawn side of a weight, so that a bias (1 × 2048) stays visible.
WEIGHT_MIN_PX = 3
# Beyond this many experts the routing is drawn as a grid of short cells, not a line each.
MANY_EXPERTS = 16


def esc(text: object) -> str:
    """Text for HTML, from anywhere: control and bidi characters spelled out, markup escaped."""
    return html.escape(visible(text), quote=True)


def nobr(text: object, cls: str = "nobr") -> str:
    """Text the browser never breaks: a shape, a number with its unit."""
    return f'<span class="{cls}">{esc(text)}</span>'


def formula_html(text: object) -> str:
    """A formula that breaks at its spaces, or after a `·` where a term is wider than its box,
    never inside a name (W_gate stays W_gate), a shape or a number with its unit."""
    out, end = [], 0
    line = str(text)
    for match in UNBREAKABLE.finditer(line):
        out += [esc(line[end : match.start()]).replace("·", "·<wbr>"), nobr(match.group())]
        end = match.end()
    return "".join([*out, esc(line[end:]).replace("·", "·<wbr>")])


class Scale:
    """One scale for the page: bars by the widest step's last dimension, weights by the longest side."""

    def __init__(self, lanes: list[Lane]) -> None:
        nodes = [n for lane in lanes for n in lane.nodes()]
        nodes += [p for n in nodes for p in n.parts]
        self.widest = max((n.width for n in nodes), default=1) or 1
        sides = [d for n in nodes for w in n.weights for d in w.shape[-2:]]
        self.longest = max(sides, default=1) or 1

    def bar(self, width: int) -> str:
        return f"{100 * width / self.widest:.2f}%"

    def weight(self, w: Weight) -> tuple[float, float]:
        """(width, height) in pixels: columns across, rows down, as W is written (d_ff × d_model)."""
        # A vector (a bias) stands as a column beside its matrix: one value per row of W.
        rows, cols = (w.shape[-2], w.shape[-1]) if len(w.shape) >= 2 else (w.shape[0] if w.shape else 1, 1)
        px = lambda n: max(WEIGHT_MIN_PX, WEIGHT_PX * n / self.longest)  # noqa: E731
        return px(cols), px(rows)


def _shapes(shapes: tuple[str, ...], role: str) -> str:
    return "".join(f'<span class="shape" data-shape="{role}">{esc(s)}</span>' for s in shapes)


def _dim(width: int) -> str:
    """A bar's label: the last dimension, or () for a 0-d output, as the terminal's width chart writes it."""
    return fmt_count(width) if width else "()"


def _bar(node: Node, scale: Scale) -> str:
    """The step's output, as long as its last dimension; the hatched part is the share of zeros."""
    zeros = node.zeros_share
    hatch = f'<span class="zeros" style="width:{100 * zeros:.1f}%"></span>' if zeros >= 0.005 else ""
    label = _dim(node.width)
    if zeros >= 0.005:
        label += " · " + _("{pct}% zeros").format(pct=f"{100 * zeros:.1f}")
    return (
        f'<div class="track"><div class="room"><div class="bar" style="width:{scale.bar(node.width)}">{hatch}</div></div>'
        f'<span class="dim">{esc(label)}</span></div>'
    )


def _weight(w: Weight, scale: Scale) -> str:
    width, height = scale.weight(w)
    stack = f" ×{w.shape[0]}" if len(w.shape) > 2 else ""
    tag = f' <span class="tag">{esc(w.tag)}</span>' if w.tag else ""
    return (
        f'<figure class="weight{" grad" if w.tag == "dW" else " again" if w.tag else ""}">'
        f'<svg width="{width + 2:.0f}" height="{height + 2:.0f}" aria-hidden="true">'
        f'<rect x="1" y="1" width="{width:.1f}" height="{height:.1f}"/></svg>'
        f'<figcaption><span class="wname">{esc(w.name)}</span> <span class="wshape">{esc(fmt_shape(w.shape))}{esc(stack)}</span>'
        f'<br><span class="wcount">{esc(fmt_count(w.count))}</span>{tag}</figcaption></figure>'
    )


def histogram_svg(h: Histogram, *, small: bool = False) -> str:
    """The values' histogram: a bar per bin, each with its range and count as a tooltip."""
    width, height = (72, 22) if small else (240, 64)
    top = max(h.counts) or 1
    step = width / len(h.counts)
    bars = []
    for i, count in enumerate(h.counts):
        tall = height * count / top
        tip = f"[{fmt_value(h.edges[i])}, {fmt_value(h.edges[i + 1])}{']' if i == len(h.counts) - 1 else ')'}: {fmt_count(count)}"
        bars.append(
            f'<rect x="{i * step:.2f}" y="{height - tall:.2f}" width="{max(step - 1, 0.5):.2f}" height="{tall:.2f}">'
            f"<title>{esc(tip)}</title></rect>"
        )
    label = esc(_("histogram of the values, from {low} to {high}").format(low=fmt_value(h.edges[0]), high=fmt_value(h.edges[-1])))
    cls = "hist small" if small else "hist"
    size = f'viewBox="0 0 {width} {height}" width="{width}" height="{height}"'
    return f'<svg class="{cls}" {size} role="img" aria-label="{label}">{"".join(bars)}</svg>'


def tokens_html(tokens: tuple[int, ...]) -> str:
    """The routing: a bar per expert, as long as the rows it got; an expert without any says so
    (with many experts, in a grid of short cells: the count alone, ✗ for none)."""
    top = max(tokens) or 1
    many = len(tokens) > MANY_EXPERTS
    rows = []
    for e, n in enumerate(tokens):
        bar = f'<span class="tbar" style="width:{100 * n / top:.1f}%"></span>' if n else ""
        if many:
            text = fmt_count(n) if n else "✗"
        else:
            text = ngettext("{count} token", "{count} tokens", n).format(count=fmt_count(n)) if n else _("no token: did not run")
        rows.append(
            f'<li data-expert="{e}" data-tokens="{n}"><span class="tname">{e}</span><span class="ttrack">{bar}</span>'
            f'<span class="tcount">{esc(text)}</span></li>'
        )
    legend = f'<p class="tlegend">{esc("✗ " + _("no token: did not run"))}</p>' if many and min(tokens) == 0 else ""
    cls = "tokens many" if many else "tokens"
    return f'<ol class="{cls}" aria-label="{esc(_("tokens per expert"))}">{"".join(rows)}</ol>{legend}'


def _node(node: Node, scale: Scale, root: str) -> str:
    """A step's box: number and name, formula, bar, weights; the arrow below it carries its output shapes."""
    head = f'<span class="num">{esc(node.number)}</span> ' if node.number else ""
    head += f'<span class="name">{esc(node.name)}</span>'
    op = f'<div class="op">{formula_html(node.operation)}</div>' if node.operation else ""
    hist = histogram_svg(node.histogram, small=True) if node.histogram is not None and node.kind != "input" else ""
    weights = "".join(_weight(w, scale) for w in node.weights) if node.kind != "expert" else ""
    extra = tokens_html(node.tokens) if node.tokens is not None else ""
    if node.parts:
        extra += _parts(node, scale)
    if node.kind == "expert":
        extra += f'<div class="wsum">{esc(_("{count} parameters").format(count=fmt_count(node.params)))}</div>'
    body = f'<div class="body">{op}{_bar(node, scale)}{hist}{extra}</div>'
    side = f'<div class="weights" aria-label="{esc(_("weights"))}">{weights}</div>' if node.kind != "expert" else ""
    label = esc(f"{node.number} {node.name}".strip())
    box = (
        f'<div class="node {node.kind}" id="{root}-{node.key}" data-node="{node.key}" data-name="{esc(node.name)}" '
        f'tabindex="0" role="button" aria-label="{label}" aria-controls="{root}-panel">'
        f'<div class="head">{head}</div><div class="inner">{body}{side}</div></div>'
    )
    arrow = (
        ""
        if node.kind == "output"
        else f'<div class="arrow"><span class="glyph" aria-hidden="true">↓</span>{_shapes(node.outputs, "out")}</div>'
    )
    return f'<div class="cell">{box}{arrow}</div>'


def _parts(node: Node, scale: Scale) -> str:
    """An expert's own steps, each a thin bar to the page's scale: its FFN, widening and narrowing."""
    items = "".join(
        f'<li><span class="pname">{esc(p.name.removeprefix(node.name + "."))}</span>'
        f'<span class="pdim">{esc(_dim(p.width))}</span>'
        f'<span class="ptrack"><span class="pbar" style="width:{scale.bar(p.width)}"></span></span></li>'
        for p in node.parts
    )
    return f'<ol class="parts">{items}</ol>'


def _row(row: tuple[Node, ...], scale: Scale, root: str) -> str:
    if len(row) == 1:
        return f'<div class="row">{_node(row[0], scale, root)}</div>'
    sources = ", ".join(_("input") if source == "input" else source for source in row[0].sources) or _("input")
    kind = "experts" if row[0].kind == "expert" else "branches"
    note = _("{count} steps side by side, each reading {sources}").format(count=len(row), sources=sources)
    cells = "".join(_node(n, scale, root) for n in row)
    return f'<div class="row {kind}"><p class="rownote">{esc(note)}</p><div class="side">{cells}</div></div>'


def lane_html(lane: Lane, scale: Scale, root: str) -> str:
    rows = "".join(_row(r, scale, root) for r in lane.rows)
    return f'<section class="lane {lane.kind}" aria-label="{esc(lane.title)}"><h2>{esc(lane.title)}</h2>{rows}</section>'
