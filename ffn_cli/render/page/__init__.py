"""`ffn trace --page FILE.html`: the run drawn as one self-contained page (inline CSS, SVG and a
little JavaScript; nothing fetched), in the run's language. It is drawn from the `--json` dict
of the same run, which it embeds whole (`<script type="application/json" id="ffn-trace">`), so
the picture, the tables and a program reading the page cannot disagree.

`trace_page` writes a whole document; `trace_fragment` the same drawing for a notebook cell,
its ids under a root of its own so that several can share a notebook."""

from __future__ import annotations

import itertools
import json
from importlib.resources import files
from typing import Any

from ffn_cli.i18n import _, language
from ffn_cli.render.format import fmt_count, fmt_flops, fmt_shape
from ffn_cli.render.page.detail import detail_html
from ffn_cli.render.page.draw import Scale, esc, lane_html
from ffn_cli.render.page.nodes import Lane, backward_lane, forward_lane
from ffn_cli.render.trace import _run_line
from ffn_cli.tracing.result import TraceResult

__all__ = ["script_json", "trace_fragment", "trace_page"]

_fragments = itertools.count(1)


def script_json(data: Any) -> str:
    """JSON safe inside <script type="application/json">: no `<` (so no `</script>`, no `<!--`),
    no `>` or `&`, and nothing beyond ASCII (no bidi override, no line separator), each written
    as its \\u escape, which JSON reads back."""
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    for ch in "<>&":
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text


def _asset(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def _lanes(result: TraceResult, data: dict[str, Any]) -> list[Lane]:
    lanes = [forward_lane(result, data)]
    backward = backward_lane(result, data)
    return lanes + ([backward] if backward is not None else [])


def _title(result: TraceResult) -> tuple[str, str]:
    """(title, formula): the variant and its formula, or the module and where it came from."""
    if result.spec is not None:
        return f"ffn trace · {result.spec.variant}", _(result.spec.info.header_formula(result.spec))
    m = result.module
    return f"ffn trace · {m.name}", m.class_name + (f" · {m.origin}" if m.origin else "")


def _header(result: TraceResult, data: dict[str, Any]) -> str:
    title, formula = _title(result)
    d_model = result.spec.d_model if result.spec is not None else result.module.d_model
    totals = [
        _("parameters") + " " + fmt_count(data["total_params"]),
        "FLOPs " + fmt_count(data["total_flops"]) + f" ({fmt_flops(data['total_flops'])})",
        _("shape") + f" {fmt_shape(data['input_shape'])} → {fmt_shape(data['output_shape'])}",
    ]
    hint = _(
        "Each bar is as long as its step's output is wide (the last dimension, to scale); the hatched part is the "
        "share of zeros. Weights stand beside the step that reads them, drawn to scale (rows × columns). "
        "Hover, tap or Tab to a step (↑ ↓ move on) to see its numbers."
    )
    about = []
    model = data.get("model")
    if model:  # as the panel over the tables names the layer
        about.append(
            _("{name} · layer {layer} of {layers} ({kind})").format(
                name=model["name"], layer=model["layer"], layers=model["n_layers"], kind=model["layer_kind"]
            )
        )
    if result.block is not None:
        about.append(_("in a Transformer block: {block}").format(block=result.block.describe().shown()))
    if result.is_meta:
        about.append(_("Values: n/a on the meta device (tensors have shapes, no data); nothing was allocated."))
    return (
        f'<header><h1>{esc(title)}</h1><p class="formula">{esc(formula)}</p>'
        + "".join(f'<p class="run">{esc(line)}</p>' for line in about)
        + f'<p class="run">{esc(_run_line(result, d_model))}</p>'
        f'<p class="totals">{" · ".join(esc(t) for t in totals)}</p><p class="hint">{esc(hint)}</p></header>'
    )


def _page_data(lanes: list[Lane]) -> dict[str, Any]:
    """What the page adds to --json: each drawn step's histogram (bins of the real values)."""
    nodes = [n for lane in lanes for n in lane.nodes()]
    nodes += [p for n in nodes for p in n.parts]
    return {"language": language(), "histograms": {n.key: n.histogram.data() for n in nodes if n.histogram is not None}}


def _body(result: TraceResult, data: dict[str, Any], root: str) -> str:
    lanes = _lanes(result, data)
    scale = Scale(lanes)
    nodes = [n for lane in lanes for n in lane.nodes()]
    details = "".join(detail_html(n, root) for n in nodes)
    intro = esc(_("Hover or tap a step to see what the table shows for it."))
    panel = (
        f'<aside class="panel" id="{root}-panel" aria-live="polite" aria-label="{esc(_("the step"))}">'
        f'<p class="intro">{intro}</p>{details}</aside>'
    )
    drawing = "".join(lane_html(lane, scale, root) for lane in lanes)
    return (
        f'<div class="ffn-page" id="{root}" lang="{esc(language())}">{_header(result, data)}'
        f'<div class="layout"><main class="lanes">{drawing}</main>{panel}</div>'
        f'<script type="application/json" class="ffn-trace" id="{root}-trace">{script_json(data)}</script>'
        f'<script type="application/json" class="ffn-page-data" id="{root}-page">{script_json(_page_data(lanes))}</script>'
        f"</div><script>{_asset('page.js')}\nffnPage({json.dumps(root)});</script>"
    )


def trace_page(result: TraceResult, data: dict[str, Any]) -> str:
    """A whole HTML document. `data`: the run's `--json` dict, JSON-ready (as `json_ready` makes it)."""
    title, _formula = _title(result)
    return (
        f'<!DOCTYPE html>\n<html lang="{esc(language())}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_asset('page.css')}</style></head>"
        f"<body>{_body(result, data, 'ffn')}</body></html>\n"
    )


def trace_fragment(result: TraceResult, data: dict[str, Any]) -> str:
    """The same drawing for a notebook cell: its style and script inline, its ids its own."""
    root = f"ffn-{next(_fragments)}"
    return f"<style>{_asset('page.css')}</style>{_body(result, data, root)}"
