"""What the panel shows for a step, as the tables show it: operation, input → output, weights,
parameters, FLOPs, the value statistics with their histogram, the notes, and why the step is
there. One article per node, hidden until its step is hovered, tapped or reached by keyboard."""

from __future__ import annotations

from typing import Any

from ffn_cli.i18n import _
from ffn_cli.render.format import fmt_count, fmt_flops, fmt_shape, fmt_value
from ffn_cli.render.page.draw import esc, formula_html, histogram_svg, nobr, tokens_html
from ffn_cli.render.page.nodes import Node

__all__ = ["detail_html"]


def _num(value: float | None) -> str:
    return "n/a" if value is None else fmt_value(value)


def _shapes(shapes: tuple[str, ...], role: str) -> str:
    return "<br>".join(f'<span class="shape" data-shape="{role}">{esc(s)}</span>' for s in shapes)


def _stats(stats: dict[str, Any]) -> str:
    """The statistics table's row for this step, with the same headings."""
    cells = [
        (_("mean"), _num(stats["mean"])),
        (_("std"), _num(stats["std"])),
        (_("min"), _num(stats["min"])),
        (_("max"), _num(stats["max"])),
        (_("zeros %"), f"{stats['zeros_pct']:.1f}"),
        (_("negatives"), fmt_count(stats["negatives"])),
    ]
    rows = "".join(f'<tr><th scope="row">{esc(h)}</th><td data-stat="{esc(h)}">{esc(v)}</td></tr>' for h, v in cells)
    return f'<table class="stats"><tbody>{rows}</tbody></table>'


def _field(name: str, value: str, role: str, *, wide: bool = False) -> str:
    """A name and its value side by side, or (wide: a table) the value under its name, across the panel."""
    cls = ' class="wide"' if wide else ""
    return f'<dt{cls}>{esc(name)}</dt><dd{cls} data-field="{role}">{value}</dd>'


def _weights(node: Node) -> str:
    items = [
        f"<li>{esc(w.name)} {nobr(fmt_shape(w.shape), 'shape')} · {nobr(fmt_count(w.count))}{f' · {esc(w.tag)}' if w.tag else ''}</li>"
        for w in node.weights
    ]
    return f'<ul class="plain">{"".join(items)}</ul>'


def _flops(node: Node) -> str:
    parts = " + ".join(f"{nobr(fmt_count(n))} {esc(label)}" for label, n in node.flop_parts if n)
    total = f'<span class="flops">{esc(fmt_count(node.flops))}</span>'
    short = f" ({nobr(fmt_flops(node.flops))})" if node.flops >= 1000 else ""
    return total + short + (f" = {parts}" if parts and len([n for _l, n in node.flop_parts if n]) > 1 else "")


def _parts(node: Node) -> str:
    rows = "".join(
        f"<tr><td>{nobr(p.name.removeprefix(node.name + '.'))}</td><td>{formula_html(p.operation)}</td>"
        f"<td>{'<br>'.join(nobr(s, 'shape') for s in p.inputs)} → {'<br>'.join(nobr(s, 'shape') for s in p.outputs)}</td>"
        f"<td>{nobr(fmt_count(p.flops))}</td></tr>"
        for p in node.parts
    )
    head = "".join(f"<th scope='col'>{esc(h)}</th>" for h in (_("step"), _("operation"), _("input → output"), "FLOPs"))
    return f'<div class="scroll"><table class="partlist"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'


def detail_html(node: Node, root: str) -> str:
    """The panel's article for `node`."""
    title = (f'<span class="num">{esc(node.number)}</span> ' if node.number else "") + f'<span class="name">{esc(node.name)}</span>'
    fields = []
    if node.operation:
        fields.append(_field(_("operation"), f'<span class="formula">{formula_html(node.operation)}</span>', "operation"))
    # As the table's cell: the inputs, then each output marked →, a shape a line.
    outputs = "<br>".join(f'→ <span class="shape" data-shape="out">{esc(s)}</span>' for s in node.outputs)
    flow = (_shapes(node.inputs, "in") + "<br>" if node.inputs else "") + outputs
    fields.append(_field(_("input → output"), flow, "shapes"))
    if node.sources:
        fields.append(_field(_("reads"), esc(", ".join(node.sources)), "sources"))
    if node.weights:
        fields.append(_field(_("weights"), _weights(node), "weights"))
    if node.params:
        fields.append(_field(_("params"), f'<span class="params">{esc(fmt_count(node.params))}</span>', "params"))
    if node.kind not in ("input", "output"):
        fields.append(_field("FLOPs", _flops(node), "flops"))
    if node.tokens is not None:
        fields.append(_field(_("tokens per expert"), tokens_html(node.tokens), "tokens"))
    if node.parts:
        fields.append(_field(_("its steps"), _parts(node), "parts", wide=True))
    if node.stats is not None:
        hist = ""
        if node.histogram is not None:
            low, high = (fmt_value(e) for e in (node.histogram.edges[0], node.histogram.edges[-1]))
            hist = histogram_svg(node.histogram) + f'<div class="axis"><span>{esc(low)}</span><span>{esc(high)}</span></div>'
        fields.append(_field(_("values"), _stats(node.stats) + hist, "values"))
    if node.grad is not None:
        grad = _("norm {norm} · mean {mean} · max |g| {max_abs}").format(
            norm=_num(node.grad["norm"]), mean=_num(node.grad["mean"]), max_abs=_num(node.grad["max_abs"])
        )
        fields.append(_field(_("gradient handed on"), esc(grad), "grad"))
    if node.notes:
        fields.append(_field(_("notes"), esc("; ".join(node.notes)), "notes"))
    if node.explanation:
        fields.append(_field(_("why it is there"), f'<span class="why">{esc(node.explanation)}</span>', "why"))
    return (
        f'<article class="detail" id="{root}-d-{node.key}" data-for="{node.key}" hidden>'
        f"<h3>{title}</h3><dl>{''.join(fields)}</dl></article>"
    )
