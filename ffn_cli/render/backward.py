"""The backward part of `ffn trace --backward`: its steps, the saved tensors they read, the
gradients' statistics and the totals, as rich renderables or JSON, from the same fields.

Every table is a FitTable: names, shapes and FLOPs stand whole, and when the terminal is
narrow the columns leave in each table's stated order (see render/fit.py)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ffn_cli.i18n import _, shown
from ffn_cli.render.cells import gradient_stats_cells, num, shapes
from ffn_cli.render.experts import elided_label, idle_label
from ffn_cli.render.explain import backward_explanation
from ffn_cli.render.fit import Cell, Col, FitTable, Layouts, Wide, add_words
from ffn_cli.render.format import fmt_bytes, fmt_count, fmt_flops, fmt_shape, fmt_si
from ffn_cli.tracing.expert_summary import ElidedBackward, elided_backward, summarise_experts
from ffn_cli.tracing.result import BackwardResult, BackwardStep, ParamGrad, SavedRead, TensorStats, TraceResult, grad_norm

__all__ = ["backward_data", "backward_sections", "loss_words"]

# As the forward's steps table: exact FLOPs below this total, SI prefixes above.
EXACT_FLOPS_BELOW = 10**13


def _step_label(s: BackwardStep) -> str:
    return f"{s.of}\n" + _("(recompute)") if s.recompute else s.of


def _weight_grads(s: BackwardStep) -> str:
    """Parameter gradients the step made, named relative to its forward step's module."""
    prefix = s.of + "."
    lines = []
    for p in s.weight_grads:
        name = p.name.removeprefix(prefix)
        name = name.removesuffix(".weight") if "." in name else name
        lines.append(f"{name} {fmt_shape(p.shape)}")
    return "\n".join(lines)


def _count(flops: int, b: BackwardResult) -> str:
    """Exact, as the forward table, unless the run is so large that the digits would crowd it."""
    return fmt_count(flops) if b.flops + b.recompute_flops < EXACT_FLOPS_BELOW or not flops else fmt_si(flops)


def _flops(s: BackwardStep, b: BackwardResult) -> str:
    """dW and dx matmul FLOPs on their own lines; elementwise on a third when there are any."""
    if s.recompute:
        return _count(s.flops, b)  # forward work done again
    lines = []
    if s.weight_grad_flops:
        lines.append(f"dW {_count(s.weight_grad_flops, b)}")
    if s.input_grad_flops:
        lines.append(f"dx {_count(s.input_grad_flops, b)}")
    if s.elementwise_flops or not lines:
        lines.append(f"{'ew ' if lines else ''}{_count(s.elementwise_flops, b)}")
    return "\n".join(lines)


def _steps_table(result: TraceResult, b: BackwardResult) -> Layouts:
    """Wide: one row per backward step with every column. Narrower: the weight gradients each
    step makes move to a table of their own, so that no step loses its shapes."""
    title = _("Backward, step by step, as autograd ran it (dL/dy: {loss})").format(loss=loss_words(b.loss))
    footer = f"dW {_count(b.weight_grad_flops, b)}\ndx {_count(b.input_grad_flops, b)}"
    # The FLOPs cell's lines (`dW …`, `dx …`) are numbers: each stands whole, right-aligned.
    columns = [
        Col("#", drop=3),
        Col(_("backward of"), "terms", footer=_("total")),
        Col(_("gradient in → out"), "fixed", drop=4),
        Col(_("makes"), "fixed", drop=1),
        Col(_("from"), "fixed", drop=2),
        Col("FLOPs", footer=footer),
    ]
    rows = []
    span = _elided(result, b)
    for n, s in enumerate(b.steps, 1):
        if span is not None and span.start < n <= span.end:
            if n == span.start + 1:
                rows.append(["…", _elided_label(result), "", _("{count:,} steps").format(count=span.count), "", _span_flops(span, b)])
            continue
        flow = shapes(s.grad_in)
        out = shapes(s.grad_out, "→ ")
        rows.append(
            [
                str(n),
                _step_label(s),
                f"{flow}\n{out}" if flow and out else flow or out,
                _weight_grads(s),
                ", ".join("dL/dy" if i == 0 else f"#{i}" for i in s.inputs_from),
                _flops(s, b),
            ]
        )
    cells = _plain(rows)
    num_col, step_col, flow_col, makes_col, source_col, flops_col = columns
    moved = [
        FitTable(
            title,
            [num_col, step_col, replace(flow_col, drop=None), source_col, flops_col],
            [[row[i] for i in (0, 1, 2, 4, 5)] for row in cells],
        ),
        FitTable(
            _("Weight gradients each backward step makes"),
            [num_col, replace(step_col, footer=""), replace(makes_col, header=_("weight gradients"), drop=None)],
            [[row[i] for i in (0, 1, 3)] for row in cells if row[3].plain],
        ),
    ]
    return Layouts([[FitTable(title, columns, cells)], moved])


def _elided(result: TraceResult, b: BackwardResult) -> ElidedBackward | None:
    """The backward steps of the experts the forward's tables elide, if any."""
    summary = summarise_experts(result.steps)
    return elided_backward(b.steps, result.steps, summary) if summary is not None else None


def _elided_label(result: TraceResult) -> str:
    """experts.2–4094, as the forward's tables name the elided experts."""
    summary = summarise_experts(result.steps)
    assert summary is not None
    return elided_label(summary, result.steps)


def _idle_params(result: TraceResult, b: BackwardResult) -> list[ParamGrad]:
    """The parameters of the experts no token chose: no backward step made their gradient."""
    summary = summarise_experts(result.steps)
    if summary is None or not summary.idle:
        return []
    idle = set(summary.idle_experts)
    return [p for p in b.params if p.step is None and p.expert in idle]


def _idle_label(result: TraceResult) -> str:
    summary = summarise_experts(result.steps)
    assert summary is not None
    return _("{count:,} {idle}").format(count=summary.idle, idle=idle_label(summary))


def _span_flops(span: ElidedBackward, b: BackwardResult) -> str:
    return f"dW {_count(span.weight_grad_flops, b)}\ndx {_count(span.input_grad_flops, b)}\new {_count(span.elementwise_flops, b)}"


def _plain(rows: list[list[str]]) -> list[list[Text]]:
    """Names and shapes as plain text: `[2, 5]` is not markup."""
    return [[Text(cell) for cell in row] for row in rows]


def loss_words(loss: str) -> str:
    """dL/dy as the reader reads it: how the output gradient was made."""
    return {"random": _("seeded normal"), "sum": _("L = Σy, all ones"), "mse": "L = mean((y − t)²)"}[loss]


def _reads_table(result: TraceResult, b: BackwardResult) -> FitTable:
    columns = [
        Col("#", drop=2),
        Col(_("backward of"), "terms"),
        Col(_("reads"), "fixed"),
        Col("dtype", "fixed", drop=1),
        Col(_("kept by"), "fixed", drop=3),
        Col(_("bytes")),
    ]
    rows = []
    views = False
    span = _elided(result, b)
    for n, s in enumerate(b.steps, 1):
        if span is not None and span.start < n <= span.end:
            if n == span.start + 1:
                read = sum(r.bytes_ for s in b.steps[span.start : span.end] for r in s.reads)
                rows.append(["…", _elided_label(result), "", "", _("{count:,} steps").format(count=span.count), fmt_bytes(read)])
            continue
        for k, r in enumerate(s.reads):
            first = k == 0
            size = fmt_bytes(r.bytes_) if r.bytes_ else _("recomputed") if r.recomputed else _("kept")
            by = _("input") if r.saved_by == "input" else r.saved_by  # the forward tables' word for it
            saved_by = by + " " + _("(recomputed)") if r.recomputed else by
            if r.part:  # marked beside its maker: the bytes stay aligned
                saved_by, views = saved_by + " *", True
            rows.append([str(n) if first else "", s.of if first else "", fmt_shape(r.shape), r.dtype, saved_by, size])
    caption = _("* part of a larger tensor (a chunk, a view): the bytes are the whole tensor's, which the part keeps alive")
    return FitTable(_("Saved tensors each backward step reads"), columns, _plain(rows), caption=caption if views else None)


# The norm says most about a gradient; its mean, then its largest entry, leave first.
def _stats_columns() -> tuple[Col, ...]:
    return (Col(_("norm")), Col(_("mean"), drop=2), Col(_("max |g|"), drop=3))


def _flags(flags: tuple[str, ...]) -> Text:
    return Text(", ".join(shown(f) for f in flags), style="bold red")


def _grad_stats_table(result: TraceResult, b: BackwardResult) -> FitTable:
    columns = [Col("#", drop=1), Col(_("backward of"), "terms"), *_stats_columns(), Col(_("flags"), "text", drop=4)]
    rows: list[list[Cell]] = [[Text(""), Text("dL/dy"), *gradient_stats_cells(b.output_grad), Text("")]]
    span = _elided(result, b)
    for n, s in enumerate(b.steps, 1):
        if span is not None and span.start < n <= span.end:
            if n == span.start + 1:
                elided = Text(_("{count:,} steps elided").format(count=span.count))
                rows.append([Text("…"), Text(_elided_label(result)), "", "", "", elided])
            continue
        if not s.recompute:
            rows.append([Text(str(n)), Text(s.of), *gradient_stats_cells(s.stats), _flags(s.flags)])
    rows.append([Text(""), Text("dL/dx"), *gradient_stats_cells(b.input_grad), Text("")])
    # Flags (nan, inf, vanishing) outlast every statistic; with none raised there is no column.
    if span is None and not any(s.flags for s in b.steps if not s.recompute):
        columns, rows = columns[:-1], [row[:-1] for row in rows]
    return FitTable(_("Gradient each step hands on"), columns, rows)


def _param_table(result: TraceResult, b: BackwardResult) -> FitTable:
    columns = [Col(_("parameter"), "fixed"), Col(_("shape"), "fixed", drop=4), *_stats_columns(), Col("#", drop=1)]
    rows: list[list[Cell]] = []
    span = _elided(result, b)
    elided = [p for p in b.params if span is not None and p.name in span.params]
    idle = _idle_params(result, b)
    for p in b.params:
        of = _("{count:,} parameters of {label}")
        if elided and p is elided[0]:
            rows.append([Text(of.format(count=len(elided), label=_elided_label(result))), Text(""), "", "", "", "…"])
        if idle and p is idle[0]:
            rows.append([Text(of.format(count=len(idle), label=_idle_label(result))), Text(""), _("no gradient"), "", "", ""])
        if (elided and span is not None and p.name in span.params) or p in idle:
            continue
        name = Text(p.name)
        if p.flags:
            name.append(" ").append_text(_flags(p.flags))
        cells = gradient_stats_cells(p.stats) if p.stats is not None else [_("no gradient"), "", ""]  # an expert no token reached
        rows.append([name, Text(fmt_shape(p.shape)), *cells, str(p.step) if p.step is not None else ""])
    return FitTable(_("Parameter gradients"), columns, rows)


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}×" if b else "n/a"


def _totals(result: TraceResult, b: BackwardResult) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    forward = result.total_flops
    text = _("{total} ({short}) = {dw} dW + {dx} dx matmul + {elementwise} elementwise; {ratio} forward")
    flops = text.format(
        total=fmt_count(b.flops),
        short=fmt_flops(b.flops),
        dw=fmt_count(b.weight_grad_flops),
        dx=fmt_count(b.input_grad_flops),
        elementwise=fmt_count(b.flops - b.weight_grad_flops - b.input_grad_flops),
        ratio=_ratio(b.flops, forward),
    )
    add_words(grid, _("backward FLOPs"), flops)
    both = forward + b.flops
    text = _("{total} ({short}): {ratio} forward")
    add_words(grid, _("forward + backward"), text.format(total=fmt_count(both), short=fmt_flops(both), ratio=_ratio(both, forward)))
    if b.checkpoint:
        hardware = both + b.recompute_flops
        text = _("{recomputed} recomputed; hardware FLOPs {hardware} ({short}): {ratio} forward, beside the model's {model}")
        add_words(
            grid,
            _("with recompute"),
            text.format(
                recomputed=fmt_count(b.recompute_flops),
                hardware=fmt_count(hardware),
                short=fmt_flops(hardware),
                ratio=_ratio(hardware, forward),
                model=_ratio(both, forward),
            ),
        )
    if b.peak_bytes is not None and b.start_bytes is not None:
        text = _("{peak} during backward; {start} alive as it began (weights, input, saved tensors, y, dL/dy)")
        add_words(grid, _("peak memory"), text.format(peak=fmt_bytes(b.peak_bytes), start=fmt_bytes(b.start_bytes)))
    if b.checkpoint:
        text = _("{bytes} kept (the checkpoint's input); the rest recomputed")
        add_words(grid, _("saved tensors"), text.format(bytes=fmt_bytes(result.saved_bytes)))
    else:
        text = _("{bytes} read by the steps above: everything autograd kept")
        add_words(grid, _("saved tensors"), text.format(bytes=fmt_bytes(b.saved_bytes)))
    if not result.is_meta:  # meta tensors have no values, so no norms
        add_words(grid, _("gradient norm"), _norms(result, b))
    if b.check is not None:
        c = b.check
        verdict = "[green]✓[/]" if c.passed else "[red]" + _("✗ FAILED") + "[/]"
        text = _("worst relative gradient error {error} vs the NumPy float64 backward; threshold {threshold} for {dtype} {verdict}")
        add_words(
            grid, _("check"), text.format(error=f"{c.max_rel_error:.3g}", threshold=f"{c.threshold:g}", dtype=c.dtype, verdict=verdict)
        )
    return grid


def _norms(result: TraceResult, b: BackwardResult) -> str:
    if result.block is None:
        return _("{norm} over every parameter").format(norm=num(b.grad_norm()))
    ffn, attn = b.grad_norm("ffn."), b.grad_norm("attn.")
    ratio = f"{ffn / attn:.2f}×" if attn else "n/a"
    return _("FFN {ffn} / attention {attn} = {ratio}").format(ffn=num(ffn), attn=num(attn), ratio=ratio)


def _explain_table(result: TraceResult, b: BackwardResult) -> FitTable:
    """What each backward step computes, a line or two each (`--explain`)."""
    span = _elided(result, b)
    rows: list[list[Cell]] = []
    for n, s in enumerate(b.steps, 1):
        if span is None or not span.start < n <= span.end:
            rows.append([Text(str(n)), Text(_step_label(s)), Text(backward_explanation(s).shown(), style="dim")])
    columns = [Col("#"), Col(_("backward of"), "terms"), Col(_("what it computes"), "text")]
    return FitTable(_("What each backward step computes"), columns, rows)


def backward_sections(result: TraceResult, explain: bool = False) -> list[RenderableType]:
    """The backward's tables and totals, for after the forward's; with `explain`, what each
    backward step computes, under its steps."""
    b = result.backward
    if b is None:
        return []
    out: list[RenderableType] = [_steps_table(result, b)]
    if explain:
        out.append(_explain_table(result, b))
    if any(s.reads for s in b.steps):
        out.append(_reads_table(result, b))
    if result.is_meta:
        out.append(Wide(Text(_("Gradients: n/a on the meta device (shapes and FLOPs only)."), style="dim")))
    else:
        out += [_grad_stats_table(result, b), _param_table(result, b)]
    out.append(_totals(result, b))
    return out


# --- JSON ----------------------------------------------------------------------------------


def _stats(stats: TensorStats | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    finite = [v for v in (stats.mean, stats.min, stats.max) if math.isfinite(v)]
    norm = grad_norm(stats)
    return {
        "norm": norm if norm is not None and math.isfinite(norm) else None,
        "mean": stats.mean if math.isfinite(stats.mean) else None,
        "max_abs": max(abs(stats.min), abs(stats.max)) if len(finite) == 3 else None,
        "nan": stats.nan,
        "inf": stats.inf,
    }


def _step(s: BackwardStep) -> dict[str, Any]:
    return {
        "of": s.of,
        "recompute": s.recompute,
        "grad_in": [list(x) for x in s.grad_in],
        "grad_out": [list(x) for x in s.grad_out],
        "inputs_from": list(s.inputs_from),
        "weight_grads": [{"name": p.name, "shape": list(p.shape)} for p in s.weight_grads],
        "params_read": list(s.params_read),
        "saved_inputs": [{"saved_by": _saved_by(r), "shape": list(r.shape), "dtype": r.dtype, "bytes": r.bytes_} for r in s.reads],
        "weight_grad_flops": s.weight_grad_flops,
        "input_grad_flops": s.input_grad_flops,
        "elementwise_flops": s.elementwise_flops,
        "flops": s.flops,
        "dtype": s.dtype,
        "aten_ops": list(s.aten_ops),
        "grad_stats": _stats(s.stats),
        "flags": list(s.flags),
    }


def _param(p: ParamGrad) -> dict[str, Any]:
    return {"name": p.name, "shape": list(p.shape), "step": p.step, "grad_stats": _stats(p.stats), "flags": list(p.flags)}


def backward_data(result: TraceResult) -> dict[str, Any]:
    """The keys `--json` adds with --backward."""
    b = result.backward
    if b is None:
        return {}
    forward = result.total_flops
    c = b.check
    data: dict[str, Any] = {
        "loss": b.loss,
        "backward_steps": [_step(s) for s in b.steps],
        "backward_flops": b.flops,
        "backward_weight_grad_flops": b.weight_grad_flops,
        "backward_input_grad_flops": b.input_grad_flops,
        "recompute_flops": b.recompute_flops,
        "forward_backward_flops": forward + b.flops,
        "backward_to_forward": b.flops / forward if forward else None,
        "forward_backward_to_forward": (forward + b.flops) / forward if forward else None,
        "hardware_flops": forward + b.flops + b.recompute_flops,
        "checkpoint": b.checkpoint,
        "backward_peak_bytes": b.peak_bytes,
        "backward_start_bytes": b.start_bytes,
        "backward_saved_bytes_read": b.saved_bytes,
        "grad_norms": {p.name: (p.norm if p.norm is not None and math.isfinite(p.norm) else None) for p in b.params},
        "param_grads": [_param(p) for p in b.params],
        "output_grad_stats": _stats(b.output_grad),
        "input_grad_stats": _stats(b.input_grad),
        "grad_max_rel_error": c.max_rel_error if c is not None else None,
        "grad_check_threshold": c.threshold if c is not None else None,
        "grad_check_passed": c.passed if c is not None else None,
    }
    if result.block is not None:
        data["grad_norm_parts"] = {"ffn": b.grad_norm("ffn."), "attn": b.grad_norm("attn.")}
    return data


def _saved_by(read: SavedRead) -> str:
    """The step that kept (or, recomputed, made) the tensor, as --json has always named it."""
    return f"{read.saved_by} (recomputed)" if read.recomputed else read.saved_by
