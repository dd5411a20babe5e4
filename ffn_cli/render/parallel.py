"""Sharded runs and per-rank accounting → rich tables, or JSON from the same fields."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.accounting import total_params
from ffn_cli.i18n import N_, Message, _
from ffn_cli.parallel.accounting import RankParams, ShardTensor
from ffn_cli.parallel.result import ParallelResult, ParallelTiming, RankResult, StepShape
from ffn_cli.render.fit import Cell, Col, FitTable, Layouts
from ffn_cli.render.format import fmt_bytes, fmt_count, fmt_shape
from ffn_cli.spec import FFNSpec
from ffn_cli.variants.mixture import expert_of

__all__ = [
    "parallel_json",
    "parallel_timing_json",
    "rank_params_json",
    "render_parallel",
    "render_parallel_timing",
    "render_rank_params",
]

_MODE_NAMES = {"tp": N_("tensor parallel"), "ep": N_("expert parallel")}


def _spec_line(spec: FFNSpec) -> str:
    text = f"{spec.variant}, d_model {spec.d_model}, d_ff {spec.d_ff}"
    layout = spec.info.expert_layout(spec)  # the experts a mixture routes between; None for one FFN
    if layout is not None:
        text += _(", {experts} experts, top-{k}").format(experts=layout.experts, k=layout.active_experts)
        if layout.shared_hidden:
            text += _(", shared d_ff {d_ff}").format(d_ff=layout.shared_hidden)
    if spec.fused_gate_up:
        text += _(", fused gate_up")
    return text


def _header(result: ParallelResult) -> Text:
    text = _("{mode} × {world} ({backend} on {device}, {launcher}): {spec}, {dtype}, input {shape}")
    return Text.from_markup(
        text.format(
            mode=f"[bold]{_(_MODE_NAMES[result.mode])}[/]",
            world=result.world_size,
            backend=result.backend,
            device=result.device,
            launcher=result.launcher,
            spec=_spec_line(result.spec),
            dtype=result.dtype,
            shape=fmt_shape(result.input_shape),
        )
    )


def _rank_table(result: ParallelResult, *, shapes: bool = True) -> FitTable:
    """One row per rank; without `shapes`, its device and shapes are left to `_rank_shapes`."""
    ep = result.mode == "ep"
    columns = [Col(_("rank"))]
    if shapes:
        columns += [Col(_("device"), "fixed", drop=2), Col(_("input"), "fixed", drop=3), Col(_("output"), "fixed", drop=4)]
    columns += [Col(_("params")), Col(_("weight memory"), drop=5)]
    if ep:
        columns += [Col(_("tokens")), Col(_("experts"), "fixed"), Col(_("a2a sent"), drop=6), Col(_("a2a received"), drop=7)]
    else:
        columns.append(Col(_("all-reduced"), drop=6))
    columns.append(Col("max |Δ|", drop=1))
    rows: list[list[Cell]] = []
    for r in result.ranks:
        row: list[Cell] = [str(r.rank)]
        if shapes:
            row += [Text(r.device), fmt_shape(r.input_shape), fmt_shape(r.output_shape)]
        row += [fmt_count(r.params), fmt_bytes(r.param_bytes)]
        if ep:
            experts = f"{r.experts[0]}–{r.experts[-1]}" if len(r.experts) > 1 else str(r.experts[0])
            row += [fmt_count(r.tokens), experts, fmt_bytes(r.alltoall_sent_bytes), fmt_bytes(r.alltoall_received_bytes)]
        else:
            row.append(fmt_bytes(r.allreduce_bytes))
        row.append(f"{r.max_abs_diff:.3g}")
        rows.append(row)
    total = sum(r.params for r in result.ranks)
    caption = _("unsharded {unsharded} params; all ranks hold {total}").format(
        unsharded=fmt_count(result.unsharded_params), total=fmt_count(total)
    )
    return FitTable(_("per rank"), columns, rows, caption=caption)


def _rank_shapes(result: ParallelResult) -> FitTable:
    """Each rank's device and its input and output shapes: a table of their own where the rank
    table cannot hold them beside its counts."""
    columns = [Col(_("rank")), Col(_("device"), "fixed"), Col(_("input"), "fixed"), Col(_("output"), "fixed")]
    rows: list[list[Cell]] = [[str(r.rank), Text(r.device), fmt_shape(r.input_shape), fmt_shape(r.output_shape)] for r in result.ranks]
    return FitTable(_("each rank's shapes"), columns, rows)


def _rank_tables(result: ParallelResult) -> Layouts:
    """The rank table whole; where it is too wide, its shapes in a table of their own (a rank's
    shapes never give way)."""
    return Layouts([[_rank_table(result)], [_rank_table(result, shapes=False), _rank_shapes(result)]])


def _unsharded_order(name: str) -> tuple[int, int]:
    """Sort key putting tensors in the unsharded module's order: router, experts by index, the rest."""
    if name.startswith("router."):
        return (0, 0)
    expert = expert_of(name) if name.startswith("experts.") else None
    if expert is not None:
        return (1, expert)
    return (2, 0)  # a stable sort keeps the module's own order among these


def _group(name: str) -> str:
    """A row of the shards table: one per tensor, but one per whole expert (`experts.3`)."""
    return ".".join(name.split(".")[:2]) if name.startswith("experts.") else name


def _shard_rows(held: Sequence[Sequence[ShardTensor]]) -> tuple[list[str], list[list[str]]]:
    """Rank columns and rows (tensor, unsharded, split, per-rank cells) of a shards table.

    When every rank holds the same shapes (TP) one column stands for all; an expert a rank owns
    shows its parameter count, a tensor its shape, and what a rank lacks shows —.
    """
    world = len(held)
    if all([(t.name, t.shape) for t in h] == [(t.name, t.shape) for t in held[0]] for h in held):
        column = _("each of {world} ranks").format(world=world) if world > 1 else _("rank {rank}").format(rank=0)
        return [column], [[t.name, fmt_shape(t.full_shape), t.split, fmt_shape(t.shape)] for t in held[0]]
    groups: dict[str, list[ShardTensor]] = {}
    for t in sorted({t.name: t for h in held for t in h}.values(), key=lambda t: _unsharded_order(t.name)):
        groups.setdefault(_group(t.name), []).append(t)
    rows = []
    for label, tensors in groups.items():
        whole_expert = label != tensors[0].name
        unsharded = (
            _("{count} tensors, {params}").format(count=len(tensors), params=fmt_count(sum(t.count for t in tensors)))
            if whole_expert
            else fmt_shape(tensors[0].full_shape)
        )
        cells = []
        for h in held:
            mine = [t for t in h if _group(t.name) == label]
            if not mine:
                cells.append("—")
            else:
                cells.append(fmt_count(sum(t.count for t in mine)) if whole_expert else fmt_shape(mine[0].shape))
        rows.append([label, unsharded, _(str(tensors[0].split)), *cells])
    return [_("rank {rank}").format(rank=r) for r in range(world)], rows


def _shard_table(title: str, held: Sequence[Sequence[ShardTensor]], extra: Sequence[Sequence[Cell] | None] = ()) -> FitTable:
    """The shards, and `extra` rows (totals) under them; in a narrow terminal the split leaves
    first, then the unsharded size, then the ranks from the right end."""
    rank_columns, rows = _shard_rows(held)
    n = len(rank_columns)
    columns = [Col(_("tensor"), "text"), Col(_("unsharded"), "fixed", drop=2), Col(_("split"), "fixed", drop=1)]
    columns += [Col(name, drop=None if k == 0 else 2 + n - k) for k, name in enumerate(rank_columns)]
    body: list[Sequence[Cell] | None] = [[Text(c) for c in row] for row in rows]
    return FitTable(title, columns, [*body, *extra])


def _step_cell(step: StepShape, named: bool) -> str:
    """The step's name where ranks differ, its inputs, then its output marked →; a shape per line."""
    lines = ([step.name] if named else []) + [fmt_shape(s) for s in step.input_shapes] + [f"→ {fmt_shape(step.output_shape)}"]
    return "\n".join(lines)


def _step_table(result: ParallelResult, only: RankResult | None = None) -> FitTable:
    """Steps aligned by position; a row whose step differs between ranks (their own experts) names
    it per cell. `only`: that rank's column alone (the narrow layout: one table per rank)."""
    same_everywhere = all(r.steps == result.ranks[0].steps for r in result.ranks)
    ranks: Sequence[RankResult] = result.ranks[:1] if same_everywhere else result.ranks
    shown_ranks = ranks if only is None or same_everywhere else [only]
    columns = [Col(_("step"), "fixed"), Col(_("formula"), "text", drop=len(shown_ranks) + 1)]
    for k, r in enumerate(shown_ranks):
        header = _("every rank") if same_everywhere else _("rank {rank}").format(rank=r.rank)
        columns.append(Col(header, "fixed", drop=None if k == 0 else len(shown_ranks) - k))
    rows: list[Sequence[Cell] | None] = []
    for i, step in enumerate(result.ranks[0].steps):
        named = any(r.steps[i].name != step.name for r in ranks)
        label = _("expert") if named else step.name
        formula = step.formula.shown() if isinstance(step.formula, Message) else _(step.formula)
        rows.append([Text(label), Text(formula), *[Text(_step_cell(r.steps[i], named)) for r in shown_ranks]])
    title = _("shape flow") if only is None or same_everywhere else _("shape flow, rank {rank}").format(rank=only.rank)
    return FitTable(title, columns, rows)


def _step_tables(result: ParallelResult) -> Layouts:
    """Every rank's shapes side by side; where they do not fit, one table per rank."""
    if all(r.steps == result.ranks[0].steps for r in result.ranks):
        return Layouts([[_step_table(result)]])
    return Layouts([[_step_table(result)], [_step_table(result, r) for r in result.ranks]])


def _expert_table(result: ParallelResult) -> FitTable:
    columns = [Col(_("expert")), Col(_("rank")), Col(_("sharded")), Col(_("unsharded"), drop=1)]
    owner = {e: r.rank for r in result.ranks for e in r.experts}
    rows: list[Sequence[Cell] | None] = []
    for e, n in enumerate(result.tokens_per_expert):
        reference = result.unsharded_tokens_per_expert[e] if e < len(result.unsharded_tokens_per_expert) else None
        rows.append([str(e), str(owner[e]), fmt_count(n), "n/a" if reference is None else fmt_count(reference)])
    dropped = sum(r.dropped for r in result.ranks)
    caption = _("{count} rows over capacity dropped").format(count=fmt_count(dropped)) if dropped else None
    return FitTable(_("tokens per expert"), columns, rows, caption=caption)


def _check_line(result: ParallelResult) -> Text:
    if result.passed:
        text = _(
            "max |sharded − unsharded| = {diff} (tolerance {tolerance}, {dtype}): "
            "[green]✓ matches[/] the unsharded module on the same weights and input"
        )
    else:
        text = _(
            "max |sharded − unsharded| = {diff} (tolerance {tolerance}, {dtype}): "
            "[red]✗ differs from[/] the unsharded module on the same weights and input"
        )
    return Text.from_markup(
        text.format(diff=f"{result.max_abs_diff_vs_unsharded:.3g}", tolerance=f"{result.tolerance:.3g}", dtype=result.dtype)
    )


def _comm_line(result: ParallelResult) -> Text:
    r0 = result.ranks[0]
    if result.mode == "tp":
        ring = 2 * (result.world_size - 1) * r0.allreduce_bytes // result.world_size
        text = _("communication: each rank all-reduces {bytes} per forward (a ring moves {ring} over each rank's links)")
        return Text(text.format(bytes=fmt_bytes(r0.allreduce_bytes), ring=fmt_bytes(ring)))
    sent = sum(r.alltoall_sent_bytes for r in result.ranks)
    return Text(_("communication: {bytes} sent between ranks in all-to-alls (split sizes, dispatch, return)").format(bytes=fmt_bytes(sent)))


def render_parallel(result: ParallelResult) -> RenderableType:
    """The header, per-rank table, shards, shape flow (and tokens per expert), traffic and the check."""
    shards = _shard_table("shards", [r.shards for r in result.ranks])
    parts: list[RenderableType] = [_header(result), _rank_tables(result), shards, _step_tables(result)]
    if result.mode == "ep":
        parts.append(_expert_table(result))
    parts += [_comm_line(result), _check_line(result)]
    return Group(*parts)


def _rank_json(r: RankResult) -> dict[str, Any]:
    data = asdict(r)
    data.update(
        params=r.params,
        allreduce_bytes=r.allreduce_bytes,
        alltoall_sent_bytes=r.alltoall_sent_bytes,
        alltoall_received_bytes=r.alltoall_received_bytes,
        expert_params=_expert_params(r.shards),
    )
    return data


def parallel_json(result: ParallelResult) -> dict[str, Any]:
    """Every field of the result; shapes as lists. Keys: world_size, max_abs_diff_vs_unsharded, ranks[…].steps, …"""
    data = asdict(result)
    data["spec"] = result.spec.as_dict()
    data["ranks"] = [_rank_json(r) for r in result.ranks]
    data["passed"] = result.passed
    if result.mode == "ep":
        data["tokens_per_expert"] = list(result.tokens_per_expert)
    return _lists(data)


def _lists(value: Any) -> Any:
    """Tuples (shapes) as lists, so the dict equals its JSON round trip."""
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value


# --- analytic, for `ffn params --tp N / --ep N` ---------------------------------------------------


def render_rank_params(spec: FFNSpec, ranks: Sequence[RankParams]) -> RenderableType:
    """Per-rank tensors, parameters and memory, from the spec alone."""
    experts = any(t.name.startswith("experts.") for r in ranks for t in r.tensors)
    text = _("{spec}: expert parallel over {ranks} ranks, {dtype}") if experts else _("{spec}: tensor parallel over {ranks} ranks, {dtype}")
    header = Text(text.format(spec=_spec_line(spec), ranks=len(ranks), dtype=ranks[0].dtype))
    held = [r.tensors for r in ranks]
    if len(_shard_rows(held)[0]) == 1:
        params, memory = [fmt_count(ranks[0].params)], [fmt_bytes(ranks[0].param_bytes)]
    else:
        params, memory = [fmt_count(r.params) for r in ranks], [fmt_bytes(r.param_bytes) for r in ranks]
    totals: list[Sequence[Cell] | None] = [
        None,
        ["[bold]" + _("params") + "[/]", "", "", *[f"[bold]{p}[/]" for p in params]],
        ["[bold]" + _("weight memory") + "[/]", "", "", *memory],
    ]
    table = _shard_table(_("per rank"), held, totals)
    table.caption = _("unsharded {unsharded} params; all ranks hold {total}").format(
        unsharded=fmt_count(total_params(spec)), total=fmt_count(sum(r.params for r in ranks))
    )
    return Group(header, table)


def _expert_params(tensors: Sequence[ShardTensor]) -> dict[str, int]:
    """Parameters per whole expert a rank holds, as the shards table shows them."""
    counts: dict[str, int] = {}
    for t in tensors:
        if _group(t.name) != t.name:
            counts[_group(t.name)] = counts.get(_group(t.name), 0) + t.count
    return counts


def rank_params_json(spec: FFNSpec, ranks: Sequence[RankParams]) -> dict[str, Any]:
    return {
        "spec": spec.as_dict(),
        "world_size": len(ranks),
        "dtype": ranks[0].dtype,
        "ranks": [
            {
                "rank": r.rank,
                "params": r.params,
                "param_bytes": r.param_bytes,
                "tensors": [
                    {"name": t.name, "shape": list(t.shape), "full_shape": list(t.full_shape), "split": t.split, "count": t.count}
                    for t in r.tensors
                ],
                "expert_params": _expert_params(r.tensors),
            }
            for r in ranks
        ],
    }


# --- timing, for `ffn bench --tp N` --------------------------------------------------------------


def render_parallel_timing(timing: ParallelTiming) -> RenderableType:
    shape = fmt_shape((timing.batch, timing.seq_len, timing.spec.d_model))
    text = _("{mode} × {world} ({backend} on {device}): {spec}, {dtype}, input {shape}")
    header = Text(
        text.format(
            mode=_(_MODE_NAMES[timing.mode]),
            world=timing.world_size,
            backend=timing.backend,
            device=timing.device,
            spec=_spec_line(timing.spec),
            dtype=timing.dtype,
            shape=shape,
        )
    )
    columns = [Col(_("rank")), Col(_("device"), "fixed", drop=1), Col(_("median ms")), Col(_("min ms"), drop=2), Col(_("calls"), drop=3)]
    rows: list[Sequence[Cell] | None] = [
        [str(r.rank), Text(r.device), f"{r.median_ms:.3f}", f"{r.min_ms:.3f}", str(r.repeats)] for r in timing.ranks
    ]
    table = FitTable(None, columns, rows)
    text = _("a step takes the slowest rank's {ms} ms ({timer}, collectives included)")
    footer = Text(text.format(ms=f"{timing.median_ms:.3f}", timer=timing.timer))
    return Group(header, table, footer)


def parallel_timing_json(timing: ParallelTiming) -> dict[str, Any]:
    data = asdict(timing)
    data["spec"] = timing.spec.as_dict()
    data["median_ms"] = timing.median_ms
    return _lists(data)
