"""`ffn trace` results as rich renderables or a JSON-ready dict, both read from the same
TraceResult fields, so the tables and `--json` cannot disagree."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ffn_cli.i18n import N_, Message, _, shown
from ffn_cli.render.backward import backward_data, backward_sections
from ffn_cli.render.cells import MAX_SHAPES, shapes, stats_cells
from ffn_cli.render.experts import elided_label, elided_note, elided_operation, idle_label, idle_operation, ops_note
from ffn_cli.render.experts_touched import experts_touched_data, experts_touched_note
from ffn_cli.render.explain import explain_table, step_explanation
from ffn_cli.render.fit import BarChart, Cell, Col, FitTable, Layouts, Wide, add_words
from ffn_cli.render.format import fmt_bytes, fmt_count, fmt_fixed, fmt_flops, fmt_shape, fmt_si
from ffn_cli.render.literal import literal, visible_strings
from ffn_cli.render.reference import reference_data, reference_view
from ffn_cli.tracing.expert_summary import ExpertSummary, describe_tokens, elided_ops, summarise_experts
from ffn_cli.tracing.result import OpRecord, TensorStats, TraceResult, TraceStep

__all__ = ["trace_data", "trace_view", "width_diagram"]

# Widest bar of the width diagram, in cells.
DIAGRAM_CELLS = 48
# The steps table prints FLOPs exactly below this total, with SI prefixes above.
EXACT_FLOPS_BELOW = 10**13


def _shapes(seen: Sequence[tuple[int, ...]]) -> str:
    return shapes(seen, limit=MAX_SHAPES)


def _flow(inputs: Sequence[tuple[int, ...]], outputs: Sequence[tuple[int, ...]]) -> str:
    """Inputs, then the outputs each marked →, one shape per line."""
    arrows = "\n".join("→ " + line for line in _shapes(outputs).split("\n"))
    return f"{_shapes(inputs)}\n{arrows}" if inputs else arrows


def _outputs(step: TraceStep) -> tuple[tuple[int, ...], ...]:
    return step.output_shapes if len(step.output_shapes) > 1 else (step.output_shape,)


def _params(step: TraceStep) -> str:
    """weight (2048, 512) / bias (2048,): names relative to the step's own module; a parameter an
    earlier step read marked `again` (counted there), a tensor attribute marked `constant`."""
    prefix = step.name + "."
    names = [p.name.removeprefix(prefix) for p in step.params]
    # Inside a whole sub-FFN (an expert) the layer name says more than ".weight".
    names = [n.removesuffix(".weight") if "." in n else n for n in names]
    buffer, again, constant = " " + _("buffer"), " " + _("again"), " " + _("constant")
    lines = [
        f"{n} {fmt_shape(p.shape)}" + (buffer if p.buffer else "") + (again if p.reused else "")
        for n, p in zip(names, step.params, strict=True)
    ]
    lines += [f"{c.name.removeprefix(prefix)} {fmt_shape(c.shape)}{constant}" for c in step.constants]
    return "\n".join(lines)


def _flops(flops: int, result: TraceResult) -> str:
    """Exact counts, unless the run is so large that 17-digit numbers would crowd the table."""
    return fmt_count(flops) if result.total_flops < EXACT_FLOPS_BELOW or not flops else fmt_si(flops)


# --- header and footer ---------------------------------------------------------------------


def _dropout(p: float, mode: str) -> str:
    """Dropout only acts in train mode; say so rather than print a rate that is not applied."""
    if not p:
        return _("no dropout")
    if mode == "train":
        return _("dropout {p}").format(p=f"{p:g}")
    return _("dropout {p} (off in {mode})").format(p=f"{p:g}", mode=_mode_words(mode))


# Each mode said whole, so that a language names it in its own words (评估模式, not "eval 模式").
_MODE_WORDS = {"eval": N_("eval mode"), "train": N_("train mode")}


def _mode_words(mode: str) -> str:
    return _(_MODE_WORDS[mode]) if mode in _MODE_WORDS else mode


def _header(result: TraceResult) -> Panel:
    spec = result.spec
    if spec is None:
        return _module_header(result)
    bias = _("bias") if spec.bias else _("no bias")
    parts = [f"d_model {spec.d_model}", f"d_ff {spec.d_ff}", bias, _dropout(spec.dropout, result.mode)]
    if spec.init != "default":
        parts.append(_("init {init}").format(init=spec.init))
    if spec.zero_init_output:
        parts.append(_("down_proj zero-initialised"))
    if spec.fused_gate_up:
        parts.append(_("fused gate_up_proj"))
    parts += [escape(words.shown()) for words in spec.info.header_words(spec)]
    lines = [f"[bold]{escape(_(spec.info.header_formula(spec)))}[/]", " · ".join(parts)]
    if result.block is not None:
        lines.append(_("in a Transformer block: {block}").format(block=result.block.describe().shown()))
    lines.append(_run_line(result, spec.d_model))
    return Panel(_panel_lines(lines), title=f"ffn trace · {spec.variant}", title_align="left", expand=False)


def _panel_lines(lines: Sequence[str]) -> Group:
    """A header's lines (markup), each wrapping at its spaces as a table's words do: a shape or a
    number with its unit stays whole."""
    return Group(*(Wide(Text.from_markup(line, emoji=False)) for line in lines))


def _run_line(result: TraceResult, d_model: int) -> str:
    """input (2, 5, 512) = batch 2 × seq_len 5 × d_model 512 · cpu · float32 · eval mode · seed 0"""
    run = _("input {shape} = batch {batch} × seq_len {seq_len} × d_model {d_model}").format(
        shape=fmt_shape(result.input_shape), batch=result.batch, seq_len=result.seq_len, d_model=d_model
    )
    mode = _mode_words(result.mode)
    return f"{run} · {result.device} · {result.dtype} · {mode} · " + _("seed {seed}").format(seed=result.seed)


def _module_header(result: TraceResult) -> Panel:
    """A module not built from a spec: what it is, where it came from, where d_model was read."""
    m = result.module
    built = {"module": _("your module"), "transformers": _("built by transformers")}.get(m.source, m.source)
    lines = [f"[bold]{escape(m.class_name)}[/]" + (f" · {escape(shown(m.origin))}" if m.origin else "") + f" · {built}"]
    depth = " · " + _("submodules {depth} levels deep as steps").format(depth=m.depth) if m.depth > 1 else ""
    if m.opened:
        depth += _(" (opened: {paths})").format(paths=", ".join(literal(p) for p in m.opened))
    lines.append(_("d_model {d_model} (from {source})").format(d_model=m.d_model, source=escape(shown(m.d_model_from))) + depth)
    lines.append(_run_line(result, m.d_model))
    lines += ["[dim]" + escape(_("note: {note}").format(note=n.shown() if isinstance(n, Message) else _(n))) + "[/]" for n in m.notes]
    return Panel(_panel_lines(lines), title=f"ffn trace · {escape(m.name)}", title_align="left", expand=False)


def _totals(result: TraceResult) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    parts = " + ".join(f"{name} {fmt_count(n)}" for name, n in result.param_groups)
    total = fmt_count(result.total_params)
    unread = _("; {count} of them no op read ({names})").format(
        count=fmt_count(_unread_count(result)), names=", ".join(p.name for p in result.unread_params)
    )
    total_line = f"{total} = {parts}" if len(result.param_groups) > 1 else total
    add_words(grid, _("parameters"), total_line + (unread if result.unread_params else ""))
    buffers = {p.name: p for s in result.steps for p in s.buffers}
    if buffers:
        listed = ", ".join(f"{p.name} {fmt_shape(p.shape)}" for p in buffers.values())
        count = fmt_count(sum(p.count for p in buffers.values()))
        add_words(grid, _("buffers"), _("{listed}: {count} values of fixed state, not parameters").format(listed=listed, count=count))
    flops = _("{total} ({short}) = {matmul} matmul (2·m·n·k) + {elementwise} elementwise; {per_token} per token").format(
        total=fmt_count(result.total_flops),
        short=fmt_flops(result.total_flops),
        matmul=fmt_count(result.matmul_flops),
        elementwise=fmt_count(result.elementwise_flops),
        per_token=fmt_flops(result.total_flops / result.tokens),
    )
    add_words(grid, "FLOPs", flops)
    note = result.spec.info.compute_note(result.spec) if result.spec is not None else None
    if note:
        add_words(grid, _("compute"), note.shown())
    if result.block is not None:
        kept = _("{bytes}: the tensors autograd saved in this run (the whole block: attention, norms and FFN), weights excluded")
    else:
        kept = _("{bytes}: the tensors autograd saved in this run, weights excluded")
    add_words(grid, _("kept for backward"), kept.format(bytes=fmt_bytes(result.saved_bytes)))
    if result.activation_bytes_estimate is not None and result.spec is not None:
        add_words(grid, "", _estimate_line(result))
    same = _("output shape = input shape ✓") if result.output_shape == result.input_shape else _("output shape ≠ input shape ✗")
    shapes = _("{input} → {output}: {verdict}")  # the colon is the language's (full-width in Chinese)
    add_words(grid, _("shape"), shapes.format(input=fmt_shape(result.input_shape), output=fmt_shape(result.output_shape), verdict=same))
    if result.output_member:
        add_words(grid, _("output"), _other_outputs_line(result))
    if result.check is not None:
        c = result.check
        verdict = "[green]✓[/]" if c.passed else "[red]" + _("✗ FAILED") + "[/]"
        text = _("max relative error {error} vs the NumPy float64 reference; threshold {threshold} for {dtype} {verdict}")
        add_words(
            grid, _("check"), text.format(error=f"{c.max_rel_error:.3g}", threshold=f"{c.threshold:g}", dtype=c.dtype, verdict=verdict)
        )
    if result.block is not None:
        add_words(grid, _("FFN / attention"), _block_ratio(result))
    return grid


def _estimate_line(result: TraceResult) -> str:
    """The accounting's estimate of what autograd keeps, beside the bytes measured."""
    assert result.spec is not None and result.activation_bytes_estimate is not None
    mask = result.mode == "train" and bool(result.spec.dropout)
    if result.block is not None and mask:
        text = _(
            "{bytes}: the accounting's estimate for the FFN alone (its saved tensors × tokens, eval mode; "
            "without the dropout mask train mode keeps)"
        )
    elif result.block is not None:
        text = _("{bytes}: the accounting's estimate for the FFN alone (its saved tensors × tokens, eval mode)")
    elif mask:
        text = _(
            "{bytes}: the accounting's estimate for the FFN (its saved tensors × tokens, eval mode; "
            "without the dropout mask train mode keeps)"
        )
    else:
        text = _("{bytes}: the accounting's estimate for the FFN (its saved tensors × tokens, eval mode)")
    return text.format(bytes=fmt_bytes(result.activation_bytes_estimate))


def _block_ratio(result: TraceResult) -> str:
    assert result.block is not None
    counts = dict(result.param_groups)
    attn_p, ffn_p = counts.get("attn", 0), counts.get("ffn", 0)
    attn_f, ffn_f = result.part_flops("attn"), result.part_flops("ffn")
    p_ratio = f"{ffn_p / attn_p:.2f}×" if attn_p else "n/a"
    f_ratio = f"{ffn_f / attn_f:.2f}×" if attn_f else "n/a"
    text = _("parameters {ffn} / {attn} = {ratio}; FLOPs at seq_len {seq_len}: {ffn_flops} / {attn_flops} = {flops_ratio}")
    return text.format(
        ffn=fmt_count(ffn_p),
        attn=fmt_count(attn_p),
        ratio=p_ratio,
        seq_len=result.seq_len,
        ffn_flops=fmt_flops(ffn_f),
        attn_flops=fmt_flops(attn_f),
        flops_ratio=f_ratio,
    )


# --- the tables --------------------------------------------------------------------------


STEPS_TITLE = N_("Shape flow, step by step")


def _other_outputs_line(result: TraceResult) -> str:
    """Which tensor of a tuple / dict output the trace follows, and the others it returned."""
    if not result.other_outputs:  # `return y, None`: the rest is no tensor
        said = _("output{member} {shape} is followed: the only tensor the forward returned")
        return said.format(member=result.output_member, shape=fmt_shape(result.output_shape))
    others = "; ".join(f"{m.where} {fmt_shape(m.shape)} {m.dtype}" for m in result.other_outputs)
    said = _("output{member} {shape} is followed; also returned: {others}")
    return said.format(member=result.output_member, shape=fmt_shape(result.output_shape), others=escape(others))


def _steps_table(result: TraceResult) -> Layouts:
    """The shape flow, laid out for the width. Wide: one row per step with every column. Narrower:
    the weight shapes move to a table of their own, then the operations join them there, and
    at the narrowest the parameter counts go with the weights and the operations stand apart.
    A step's name, its input → output shapes and its weight shapes are never left out."""
    columns = [
        Col("#", drop=2),
        Col(_("step"), "fixed", footer=_("total")),
        Col(_("operation"), "text", drop=4),  # the only words that say what a step does: it wraps before it leaves
        Col(_("input → output"), "fixed", drop=3),
        Col(_("weight shapes"), "fixed", drop=1),
        Col(_("params"), footer=fmt_count(sum(s.param_count + s.idle_params for s in result.steps) + _unread_count(result))),
        Col("FLOPs", footer=_flops(result.total_flops, result)),
    ]
    rows = _step_rows(result)
    title, weights_title, weights = _(STEPS_TITLE), _("Weights each step uses"), Col(_("weight shapes"), "fixed")
    wide = FitTable(title, columns, rows)
    num, step, operation, flow, _weights, params, flops = columns
    named = replace(step, footer="")
    essential = [num, step, replace(flow, drop=None), params, flops]

    def pick(title: str, cols: list[Col], keep: list[int], with_weights: bool = False) -> FitTable:
        picked = [[row[i] for i in keep] for row in rows if not with_weights or row[4].plain]
        return FitTable(title, cols, picked)

    moved = [
        pick(title, [num, step, operation, *essential[2:]], [0, 1, 2, 3, 5, 6]),
        pick(weights_title, [num, named, weights], [0, 1, 4], with_weights=True),
    ]
    both_moved = [
        pick(title, essential, [0, 1, 3, 5, 6]),
        pick(_("What each step computes, and its weights"), [num, named, operation, weights], [0, 1, 2, 4]),
    ]
    # Narrowest: the shape flow alone with its FLOPs; the weights with their count, and the operations, apart.
    apart = [
        pick(title, [num, step, replace(flow, drop=None), flops], [0, 1, 3, 6]),
        FitTable(
            weights_title,
            [num, step, weights, params],
            [[r[i] for i in (0, 1, 4, 5)] for r in rows if r[4].plain or r[5].plain],
        ),
        pick(_("What each step computes"), [num, named, operation], [0, 1, 2]),
    ]
    return Layouts([[wide], moved, both_moved, apart])


def _step_rows(result: TraceResult) -> list[list[Text]]:
    summary = summarise_experts(result.steps)
    rows: list[list[Text]] = []
    for n, s in enumerate(result.steps, 1):
        if summary is not None and n - 1 == summary.end and summary.idle:
            rows.append(_idle_step_row(result, summary))
        if summary is not None and summary.is_elided(n - 1):
            if n - 1 == summary.elided_from:
                rows.append(_elided_step_row(result, summary))
            continue
        cells = [str(n), s.name, _operation(s), _flow(s.input_shapes, _outputs(s)), _params(s)]
        counted = fmt_count(s.param_count) if s.params and len(s.buffers) < len(s.params) else ""
        rows.append(_plain([[*cells, counted, _flops(s.flops, result)]])[0])
    if summary is not None and summary.end == len(result.steps) and summary.idle:
        rows.append(_idle_step_row(result, summary))
    if result.unread_params:
        shapes = "\n".join(f"{p.name} {fmt_shape(p.shape)}" for p in result.unread_params)
        rows.append(_plain([["", _("not read"), _("no op read it"), "", shapes, fmt_count(_unread_count(result)), ""]])[0])
    return rows


def _unread_count(result: TraceResult) -> int:
    return sum(p.count for p in result.unread_params)


def _operation(step: TraceStep) -> str:
    """The step's formula in the reader's language (its symbols stay as they are)."""
    return step.op_words.shown() if step.op_words is not None else _(step.op)


def _idle_step_row(result: TraceResult, summary: ExpertSummary) -> list[Text]:
    """One row for the experts no token chose: no step ran, but their parameters count."""
    cells = ["…", idle_label(summary), idle_operation(summary), "", ""]
    return _plain([[*cells, fmt_count(summary.idle_params), _flops(0, result)]])[0]


def _elided_step_row(result: TraceResult, summary: ExpertSummary) -> list[Text]:
    """One row for the experts between those shown: their count, tokens and summed columns."""
    label = elided_label(summary, result.steps)
    cells = ["…", label, elided_operation(summary), _shapes(summary.elided_shapes), ""]
    return _plain([[*cells, fmt_count(summary.elided_params), _flops(summary.elided_flops, result)]])[0]


def _shown_text(cell: Cell) -> str:
    """What a cell shows: a str is markup."""
    return cell.plain if isinstance(cell, Text) else Text.from_markup(cell).plain


def _plain(rows: list[list[str]]) -> list[list[Text]]:
    """Cells of names and shapes as plain text: `[2, 5]` is not markup."""
    return [[Text(cell) for cell in row] for row in rows]


def _ops_table(result: TraceResult) -> FitTable:
    step_of = {i: s.name for s in result.steps for i in s.op_indices}
    columns = [
        Col("#"),
        Col(_("module"), "fixed", drop=3, footer=_("total")),
        Col(_("aten op"), "fixed"),
        Col(_("inputs"), "fixed", drop=2),
        Col(_("outputs"), "fixed", drop=4),
        Col("matmul", footer=fmt_count(result.matmul_flops)),
        Col(_("elementwise"), footer=fmt_count(result.elementwise_flops)),
        Col(_("step"), "fixed", drop=1),
    ]
    rows = [_op_row(op, step_of) for op in result.ops]
    summary = summarise_experts(result.steps)
    title = _("Raw aten ops, in execution order")
    if summary is None or not summary.elided:
        return FitTable(title, columns, _plain(rows))
    label = elided_label(summary, result.steps)
    spans = elided_ops(result.ops, result.steps, summary)
    for span in reversed(spans):
        flops = [fmt_count(n) if n else "" for n in (span.matmul_flops, span.elementwise_flops)]
        rows[span.start : span.end] = [["…", label, _("{count:,} ops").format(count=span.count), "", "", *flops, ""]]
    return FitTable(title, columns, _plain(rows), caption=Text(ops_note(spans, label), style="dim"))


def _op_row(op: OpRecord, step_of: dict[int, str]) -> list[str]:
    return [
        str(op.index),
        op.path or "·",
        op.op,
        _shapes(op.input_shapes),
        _shapes(op.output_shapes),
        fmt_count(op.matmul_flops) if op.matmul_flops else "",
        fmt_count(op.elementwise_flops) if op.elementwise_flops else "",
        step_of.get(op.index, ""),
    ]


def _stats_table(result: TraceResult) -> Layouts:
    # `negatives` stays at any width: how many a ReLU turns to zero is the lesson of the table.
    columns = [Col(_("step"), "fixed"), Col(_("mean")), Col(_("std"), drop=1), Col(_("min"), drop=2), Col(_("max"), drop=2)]
    columns += [Col(_("zeros %"), drop=3), Col(_("negatives")), Col(_("notes"), "text")]
    rows: list[list[Cell]] = [[Text(_("input")), *stats_cells(result.input_stats), ""]]
    summary = summarise_experts(result.steps)
    for n, s in enumerate(result.steps):
        if summary is not None and n == summary.end and summary.idle:
            rows.append([Text(idle_label(summary)), *[""] * 6, idle_operation(summary)])
        if summary is not None and summary.is_elided(n):
            if n == summary.elided_from:
                rows.append([Text(elided_label(summary, result.steps)), *[""] * 6, elided_note(summary)])
            continue
        notes = [f"[bold red]{escape(shown(f))}[/]" for f in s.flags] + ([escape(s.note.shown())] if s.note else [])
        rows.append([Text(s.name), *stats_cells(s.stats), "; ".join(notes)])
    title = _("Values at each step (computed on the device)")
    whole = FitTable(title, columns, rows)
    # The notes move below, listed per step, before any statistic leaves the table.
    noted = [[row[0], row[-1]] for row in rows if _shown_text(row[-1])]
    apart = [
        FitTable(title, columns[:-1], [row[:-1] for row in rows]),
        FitTable(_("Notes on the values"), [columns[0], columns[-1]], noted),
    ]
    return Layouts([[whole], apart] if noted else [[whole]])


def _values_table(result: TraceResult, n: int) -> FitTable:
    def cells(values: tuple[float, ...] | None) -> str:
        return " ".join(fmt_fixed(v) for v in values) if values else "n/a"

    summary = summarise_experts(result.steps)
    rows: list[list[Cell]] = [[Text(_("input")), cells(result.input_values)]]
    for i, s in enumerate(result.steps):
        if summary is not None and i == summary.end and summary.idle:
            rows.append([Text(idle_label(summary)), idle_operation(summary)])
        if summary is not None and summary.is_elided(i):
            if i == summary.elided_from:
                rows.append([Text(elided_label(summary, result.steps)), elided_note(summary)])
            continue
        rows.append([Text(s.name), cells(s.values)])
    title = _("First {n} values of token 0 at each step").format(n=n)
    return FitTable(title, [Col(_("step"), "fixed"), Col(_("values"), "text")], rows)


# --- the width diagram ---------------------------------------------------------------------


def _diagram_rows(result: TraceResult) -> tuple[list[tuple[str, int]], str]:
    """(label, width) per step, widths being the last dim (0 for a scalar, which has none); one
    expert stands for them all."""
    rows = [(_("input"), result.input_shape[-1])]
    shown_expert, skipped = False, 0
    for s in result.steps:
        if not s.substeps:
            rows.append((s.name, s.output_shape[-1] if s.output_shape else 0))
        elif not shown_expert:
            rows += [(sub.name, sub.output_shape[-1] if sub.output_shape else 0) for sub in s.substeps]
            shown_expert = True
        else:
            skipped += 1
    note = _("(the other {count} experts have the same widths)").format(count=skipped) if skipped else ""
    return rows, note


def width_diagram(result: TraceResult) -> RenderableType:
    """Each step's output width, to scale: small → big → small."""
    rows, note = _diagram_rows(result)
    widest = max(max(w for _label, w in rows), 1)
    bars = [(label, fmt_count(w) if w else "()", w / widest) for label, w in rows]
    chart = BarChart(bars, max_cells=DIAGRAM_CELLS, value_first=True)
    title = Text(_("Width of each step's output (last dimension), to scale"), style="bold")
    return Group(Wide(title), chart, Wide(Text(note))) if note else Group(Wide(title), chart)


def trace_view(result: TraceResult, *, ops: bool = False, values: int = 0, explain: bool = False) -> Group:
    """Header, the steps (or raw ops), why each step is there (`explain`), values, totals and the
    width diagram, a blank line apart. Names from the module (its class, submodules, parameters)
    are spelled out first: an escape sequence in one is shown, never sent to the terminal."""
    parts = _sections(visible_strings(result), ops=ops, values=values, explain=explain)
    spaced: list[RenderableType] = []
    for part in parts:
        spaced += [part, Text("")]
    return Group(*spaced[:-1])


def _meta_routing(result: TraceResult) -> str:
    """On meta a router has no scores to choose by either: say how the tokens were spread."""
    tokens = next((s.tokens_per_expert for s in result.steps if s.tokens_per_expert is not None), None)
    if tokens is None:
        return ""
    if max(tokens) != min(tokens):
        spread = _("the {pairs:,} (token, expert) pairs are spread as evenly as they go, the first experts taking one more")
    else:
        spread = _("the {pairs:,} (token, expert) pairs are spread as evenly as they go")
    text = _(" Routing has no values to choose by either: {spread}; {tokens}.")
    return text.format(spread=spread.format(pairs=sum(tokens)), tokens=describe_tokens(tokens).shown())


def _experts_touched(result: TraceResult) -> dict[str, Any] | None:
    tokens = next((s.tokens_per_expert for s in result.steps if s.tokens_per_expert is not None), None)
    return experts_touched_data(result.spec, tokens, result.tokens)


def _sections(result: TraceResult, *, ops: bool, values: int, explain: bool) -> list[RenderableType]:
    out: list[RenderableType] = [_header(result), _ops_table(result) if ops else _steps_table(result)]
    if result.warnings:
        out.append(Group(*(Wide(Text(_("warning: {warning}").format(warning=w.shown()), style="yellow")) for w in result.warnings)))
    why = explain_table(result) if explain and not ops else None
    if why is not None:
        out.append(why)
    if result.is_meta:
        meta = _("Values: n/a on the meta device (tensors have shapes, no data); nothing was allocated.")
        out.append(Wide(Text(meta + _meta_routing(result), style="dim")))
    else:
        out.append(_stats_table(result))
        touched = _experts_touched(result)
        if touched is not None:
            out.append(Wide(experts_touched_note(touched)))
        if values:
            out.append(_values_table(result, values))
    out += [_totals(result), width_diagram(result)]
    if result.reference is not None:
        out.append(reference_view(result.reference))
    return out + backward_sections(result, explain=explain)


# --- JSON ----------------------------------------------------------------------------------


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _stats_data(stats: TensorStats | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {
        "numel": stats.numel,
        "mean": _finite(stats.mean),
        "std": _finite(stats.std),
        "min": _finite(stats.min),
        "max": _finite(stats.max),
        "zeros": stats.zeros,
        "zeros_pct": stats.zeros_pct,
        "negatives": stats.negatives,
        "nan": stats.nan,
        "inf": stats.inf,
        "subnormal": stats.subnormal,
    }


def _step_data(s: TraceStep) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": s.name,
        "op": s.op,
        "input_shapes": [list(x) for x in s.input_shapes],
        "output_shape": list(s.output_shape),
        "output_shapes": [list(x) for x in s.output_shapes],
        "inputs_from": list(s.inputs_from),
        "params": [{"name": p.name, "shape": list(p.shape), "count": p.count, "buffer": p.buffer, "reused": p.reused} for p in s.params],
        "constants": [{"name": c.name, "shape": list(c.shape), "count": c.count} for c in s.constants],
        "module_class": s.module_class,
        "param_count": s.param_count,
        "flops": s.flops,
        "matmul_flops": s.matmul_flops,
        "elementwise_flops": s.elementwise_flops,
        "dtype": s.dtype,
        "aten_ops": list(s.aten_ops),
        "stats": _stats_data(s.stats),
        "input_stats": _stats_data(s.input_stats),
        "values": list(s.values) if s.values is not None else None,
        "flags": list(s.flags),
        "note": str(s.note),
    }
    if s.dropout_changed is not None:
        data.update(dropout_changed=s.dropout_changed, dropout_zeroed=s.dropout_zeroed)
    if s.tokens_per_expert is not None:
        data["tokens_per_expert"] = list(s.tokens_per_expert)
        data["idle_params"] = s.idle_params
    if s.substeps:
        data["substeps"] = [_step_data(sub) for sub in s.substeps]
    return data


def _summary_data(summary: ExpertSummary, result: TraceResult) -> dict[str, Any]:
    """What the tables' summary row says; `steps` still holds every expert."""
    return {
        "experts": summary.experts,
        "elided": summary.elided,
        "elided_steps": elided_label(summary, result.steps) if summary.elided else None,
        "tokens_min": summary.tokens_min,
        "tokens_median": summary.tokens_median,
        "tokens_max": summary.tokens_max,
        "experts_without_tokens": summary.idle,
        "elided_params": summary.elided_params,
        "elided_flops": summary.elided_flops,
        "experts_ran": summary.ran,
        "idle_experts": list(summary.idle_experts),
        "idle_params": summary.idle_params,
    }


def _explanation(result: TraceResult, step: TraceStep) -> dict[str, str | None]:
    why = step_explanation(result, step)
    return {"explanation": str(why) if why is not None else None}


def _compute_note(result: TraceResult) -> str | None:
    note = result.spec.info.compute_note(result.spec) if result.spec is not None else None
    return str(note) if note is not None else None


def trace_data(result: TraceResult, *, ops: bool = False, explain: bool = False) -> dict[str, Any]:
    """Everything the tables show, as plain JSON types; with `explain`, each step's explanation
    (in English, as all of --json)."""
    c = result.check
    data: dict[str, Any] = {
        "module": result.module.as_dict(),
        "spec": result.spec.as_dict() if result.spec is not None else None,
        "block": result.block.as_dict() if result.block is not None else None,
        "batch": result.batch,
        "seq_len": result.seq_len,
        "device": result.device,
        "dtype": result.dtype,
        "mode": result.mode,
        "seed": result.seed,
        "input_shape": list(result.input_shape),
        "input_stats": _stats_data(result.input_stats),
        "input_values": list(result.input_values) if result.input_values is not None else None,
        "steps": [_step_data(s) | (_explanation(result, s) if explain else {}) for s in result.steps],
        "output_shape": list(result.output_shape),
        **({"output_member": result.output_member} if result.output_member else {}),
        **({"other_outputs": [m.as_dict() for m in result.other_outputs]} if result.other_outputs else {}),
        "total_params": result.total_params,
        "param_groups": dict(result.param_groups),
        "buffers": {p.name: list(p.shape) for st in result.steps for p in st.buffers},
        "compute_note": _compute_note(result),
        "total_flops": result.total_flops,
        "matmul_flops": result.matmul_flops,
        "elementwise_flops": result.elementwise_flops,
        "flops_per_token": result.total_flops / result.tokens,
        "saved_bytes": result.saved_bytes,
        "activation_bytes_estimate": result.activation_bytes_estimate,
        "max_rel_error": c.max_rel_error if c is not None else None,
        "check_threshold": c.threshold if c is not None else None,
        "check_passed": c.passed if c is not None else None,
    }
    if result.reference is not None:
        data["reference"] = reference_data(result.reference)
    if result.warnings:
        data["warnings"] = [str(w) for w in result.warnings]
    if result.unread_params:
        data["unread_params"] = {p.name: list(p.shape) for p in result.unread_params}
    touched = None if result.is_meta else _experts_touched(result)
    if touched is not None:
        data["experts_touched"] = touched
    if result.block is not None:
        data["block_flops"] = {"attn": result.part_flops("attn"), "ffn": result.part_flops("ffn")}
    summary = summarise_experts(result.steps)
    if summary is not None:
        data["expert_summary"] = _summary_data(summary, result)
    data.update(backward_data(result))
    if ops:
        data["ops"] = [
            {
                "index": op.index,
                "module": op.path,
                "op": op.op,
                "input_shapes": [list(x) for x in op.input_shapes],
                "output_shapes": [list(x) for x in op.output_shapes],
                "dtype": op.dtype,
                "matmul_flops": op.matmul_flops,
                "elementwise_flops": op.elementwise_flops,
                "params": list(op.params),
                "constants": list(op.constants),
                "function": op.function,
            }
            for op in result.ops
        ]
    return data
