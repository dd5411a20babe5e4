"""A mixture with many experts: the tables show a few and summarise the rest, and the summary's
numbers hold against the routing and the FLOPs recomputed here from the built module."""

from __future__ import annotations

import io
import json
import re
import statistics

import pytest
import torch
from rich.console import Console
from torch.utils.flop_counter import FlopCounterMode
from typer.testing import CliRunner

from ffn_cli import build_ffn
from ffn_cli.cli.ffn_app import app
from ffn_cli.render.format import fmt_count
from ffn_cli.render.trace import trace_view
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing import TraceResult
from ffn_cli.tracing.expert_summary import SHOW_ALL_UP_TO, SHOW_FIRST, SHOW_LAST, elided_ops, summarise_experts
from ffn_cli.tracing.recorder import record
from ffn_cli.tracing.run import trace
from ffn_cli.tracing.steps import group_steps

pytestmark = pytest.mark.usefixtures("one_thread")

D, F = 16, 8


def _spec(experts: int, variant: str = "moe") -> FFNSpec:
    return FFNSpec(variant=variant, d_model=D, d_ff=F, experts=experts, top_k=2)


def _render(result: TraceResult, *, width: int = 80, ops: bool = False) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(trace_view(result, ops=ops))
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_summary_against_the_routing_and_flop_counter() -> None:
    experts = 40
    spec = _spec(experts)
    module = build_ffn(spec, seed=3)
    x = torch.randn(4, 8, D, generator=torch.Generator().manual_seed(1))
    steps = group_steps(record(module, x)[1])
    summary = summarise_experts(steps)
    assert summary is not None

    # The routing, recomputed from the router's weight: top-2 of the softmax, counted per expert.
    logits = x.reshape(-1, D) @ module.router.weight.T
    chosen = torch.topk(torch.softmax(logits, dim=-1), 2, dim=-1).indices
    tokens = torch.bincount(chosen.reshape(-1), minlength=experts).tolist()
    hit = [e for e, n in enumerate(tokens) if n]
    assert list(summary.tokens) == tokens
    assert (summary.tokens_min, summary.tokens_max) == (min(tokens), max(tokens))
    assert summary.tokens_median == statistics.median(tokens)
    assert summary.idle == tokens.count(0) > 0
    # Only the experts some token chose ran: they are the expert steps, in expert order.
    assert [s.name for s in steps if s.substeps] == [f"experts.{e}" for e in hit]
    assert summary.ran == len(hit) and summary.idle_experts == tuple(e for e, n in enumerate(tokens) if not n)
    assert summary.elided == len(hit) - SHOW_FIRST - SHOW_LAST

    # Each SwiGLU expert does three (n_e × d × f) matmuls: 2·n_e·3·d·f FLOPs.
    elided = hit[SHOW_FIRST:-SHOW_LAST]
    assert summary.elided_matmul_flops == sum(2 * tokens[e] * 3 * D * F for e in elided)
    assert summary.elided_params == len(elided) * 3 * D * F
    assert summary.idle_params == sum(p.numel() for e in summary.idle_experts for p in module.experts[e].parameters())
    with FlopCounterMode(display=False) as counter:
        module(x)
    assert sum(s.matmul_flops for s in steps) == counter.get_total_flops()


def _flops_column(text: str) -> tuple[list[int], int]:
    """The steps table's FLOPs cells (step rows and the summary row) and its total."""
    table = text.split("Shape flow, step by step", 1)[1].split("\n\n", 1)[0]
    cells, total = [], None
    for line in table.splitlines():
        number = re.search(r"([\d,]+)\s*$", line)
        if re.match(r"\s*(\d+|…)\s+\S", line) and number:
            cells.append(int(number.group(1).replace(",", "")))
        elif line.strip().startswith("total") and number:
            total = int(number.group(1).replace(",", ""))
    assert total is not None
    return cells, total


def _params_column(text: str) -> tuple[list[int], int]:
    """The steps table's params cells (the column before FLOPs) and its total."""
    table = text.split("Shape flow, step by step", 1)[1].split("\n\n", 1)[0]
    cells, total = [], None
    for line in table.splitlines():
        number = re.search(r"([\d,]+)\s+[\d,]+\s*$", line)
        if re.match(r"\s*(\d+|…)\s+\S", line) and number:
            cells.append(int(number.group(1).replace(",", "")))
        elif line.strip().startswith("total") and number:
            total = int(number.group(1).replace(",", ""))
    assert total is not None
    return cells, total


def test_many_experts_render_small_and_add_up_at_80_columns() -> None:
    result = trace(_spec(512), device="meta")
    text = _render(result)
    summary = summarise_experts(result.steps)
    assert summary is not None
    # Meta routing is balanced: 2 × 5 tokens × top-2 = 20 pairs, one each for experts 0–19.
    assert summary.ran == 20 and summary.idle == 492
    assert len(text.splitlines()) < 120
    assert "experts.2–18" in text and "experts.19" in text and "experts.3 " not in text and "experts.20" not in text
    assert f"{summary.elided:,} more experts (of 20" in text
    assert re.search(rf"idle experts\s+492 experts got no token and\s+{fmt_count(summary.idle_params)}\s+0\s*$", text, re.M)
    # The summary row's numbers are printed whole, and the FLOPs column still adds up to its total.
    assert re.search(rf"{fmt_count(summary.elided_params)}\s+{fmt_count(summary.elided_flops)}\s*$", text, re.M)
    cells, total = _flops_column(text)
    assert sum(cells) == total == result.total_flops
    # The params column adds up to the module's count: the idle experts' row carries theirs.
    params, params_total = _params_column(text)
    assert sum(params) == params_total == result.total_params == sum(p.numel() for p in build_ffn(_spec(512), device="meta").parameters())


def test_ops_table_elides_the_expert_runs_and_keeps_the_totals() -> None:
    result = trace(_spec(40), seed=2, batch=4, seq_len=8)
    summary = summarise_experts(result.steps)
    assert summary is not None
    spans = elided_ops(result.ops, result.steps, summary)
    assert len(spans) == 2  # the per-expert lookups of the routing, then the experts' own runs
    text = _render(result, ops=True, width=120)
    shown = [line for line in text.splitlines() if re.match(r"\s*\d+\s+\S+\s+aten\.", line)]
    elided = sum(s.count for s in spans)
    assert len(shown) == len(result.ops) - elided
    ran = [s.name for s in result.steps if s.substeps]
    assert f"{elided:,} ops of {ran[SHOW_FIRST]}–{ran[-SHOW_LAST - 1].split('.')[1]}" in text
    kept = [op for p, op in enumerate(result.ops) if not any(s.start <= p < s.end for s in spans)]
    assert sum(op.matmul_flops for op in kept) + sum(s.matmul_flops for s in spans) == result.matmul_flops
    # No op of a shown expert is elided, and every op of an elided one is.
    position = {op.index: p for p, op in enumerate(result.ops)}
    for n, step in enumerate(result.steps):
        inside = {any(s.start <= position[i] < s.end for s in spans) for i in step.op_indices}
        if step.substeps:
            assert inside == {summary.is_elided(n)}, step.name


def test_json_keeps_every_expert_that_ran(runner: CliRunner) -> None:
    out = runner.invoke(app, ["trace", "-v", "moe", "-d", str(D), "--d-ff", str(F), "--experts", "40", "-b", "4", "-s", "8", "--json"])
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    experts = [s for s in data["steps"] if s["name"].startswith("experts.")]
    dispatch = next(s for s in data["steps"] if s["name"] == "dispatch")
    tokens = dispatch["tokens_per_expert"]
    assert len(tokens) == 40
    assert sum(tokens) == 4 * 8 * 2  # tokens × top-2
    assert 0 in tokens and len(tokens) - tokens.count(0) > SHOW_ALL_UP_TO
    assert [s["name"] for s in experts] == [f"experts.{e}" for e, n in enumerate(tokens) if n]
    summary = data["expert_summary"]
    assert summary["experts"] == 40 and summary["experts_ran"] == len(experts)
    assert summary["idle_experts"] == [e for e, n in enumerate(tokens) if not n]
    assert summary["elided"] == len(experts) - SHOW_FIRST - SHOW_LAST
    assert summary["elided_flops"] == sum(s["flops"] for s in experts[SHOW_FIRST:-SHOW_LAST])
    # Every parameter is in a step or in the idle experts' count.
    assert sum(s["param_count"] for s in data["steps"]) + summary["idle_params"] == data["total_params"]
    assert dispatch["idle_params"] == summary["idle_params"] == len(summary["idle_experts"]) * 3 * D * F


@pytest.mark.parametrize("variant", ["moe", "soft_moe"])
def test_up_to_the_threshold_every_expert_is_shown(variant: str) -> None:
    result = trace(_spec(SHOW_ALL_UP_TO, variant), device="meta")
    assert summarise_experts(result.steps) is None
    text = _render(result, width=120)
    assert all(f"experts.{e} " in text for e in range(SHOW_ALL_UP_TO))
    assert "more experts" not in text


def test_soft_moe_summary_counts_every_token_per_expert() -> None:
    result = trace(_spec(SHOW_ALL_UP_TO + 1, "soft_moe"), device="meta")
    summary = summarise_experts(result.steps)
    assert summary is not None
    assert set(summary.tokens) == {result.tokens}


def test_backward_tables_summarise_the_same_experts_and_add_up() -> None:
    experts = 40
    result = trace(_spec(experts), seed=2, batch=4, seq_len=8, backward=True)
    assert result.backward is not None
    b = result.backward
    text = _render(result, width=120)
    table = text.split("Backward, step by step", 1)[1].split("\n\n", 1)[0]
    body, footer = table.split("total", 1)
    # Each dW and dx in the rows (the summary row's included) adds up to the footer's.
    for kind, total in (("dW", b.weight_grad_flops), ("dx", b.input_grad_flops)):
        cells = [int(n.replace(",", "")) for n in re.findall(rf"{kind} ([\d,]+)", body)]
        assert sum(cells) == total == int(re.search(rf"{kind} ([\d,]+)", footer).group(1).replace(",", ""))  # type: ignore[union-attr]
    # The experts shown forward are shown backward; the others are one row, with their parameters.
    summary = summarise_experts(result.steps)
    assert summary is not None
    ran = [s.name for s in result.steps if s.substeps]
    shown = {*ran[:SHOW_FIRST], *ran[-SHOW_LAST:]}
    assert shown <= set(re.findall(r"experts\.\d+\b(?!–)", body))
    assert not set(re.findall(r"experts\.\d+\b(?!–)", body)) - shown
    elided_params = 3 * (len(ran) - SHOW_FIRST - SHOW_LAST)
    assert f"{elided_params} parameters of {ran[SHOW_FIRST]}–{ran[-SHOW_LAST - 1].split('.')[1]}" in text
    # The idle experts' parameters got no gradient: one row says how many.
    assert f"{3 * summary.idle} parameters of {summary.idle} idle experts" in text
    # The result (and so --json) keeps every parameter.
    assert len({p.name for p in b.params if p.name.startswith("experts.")}) == 3 * experts


def test_the_dispatch_row_holds_every_expert_s_rows() -> None:
    """The dispatch step's values are all the rows it gathered, each expert's: with top-k and no
    capacity, every token goes out k times, so they are the tokens' own values k times over
    (the same mean and std, k times the count and the negatives), not the last expert's alone."""
    from ffn_cli.spec import FFNSpec
    from ffn_cli.tracing.run import trace as run_trace

    k, d = 2, 16
    result = run_trace(FFNSpec(variant="moe", d_model=d, d_ff=32, experts=4, top_k=k), batch=2, seq_len=5)
    steps = {s.name: s for s in result.steps}
    tokens, dispatched = steps["flatten"].stats, steps["dispatch"].stats
    assert tokens is not None and dispatched is not None
    assert dispatched.numel == k * tokens.numel == k * 2 * 5 * d
    assert dispatched.negatives == k * tokens.negatives and dispatched.zeros == k * tokens.zeros
    assert dispatched.mean == pytest.approx(tokens.mean, abs=1e-12) and dispatched.std == pytest.approx(tokens.std, rel=1e-12)
    assert (dispatched.min, dispatched.max) == (tokens.min, tokens.max)
