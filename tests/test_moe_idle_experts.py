"""Experts that no token chose do not run (as in transformers' MoE blocks): checked against the
routing recomputed here from the router's weight, a dense reference that runs every expert, and
the trace's tables, which still add up to the module's parameter count."""

from __future__ import annotations

import io
import re

import pytest
import torch
from rich.console import Console

from ffn_cli import build_ffn
from ffn_cli.modules.mixture import MoEFFN, balanced_share
from ffn_cli.render.format import fmt_count
from ffn_cli.render.trace import trace_view
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.expert_summary import summarise_experts
from ffn_cli.tracing.run import trace
from ffn_cli.variants import VARIANTS, MixtureVariant

pytestmark = pytest.mark.usefixtures("one_thread")

D, F, E = 16, 8, 16


def _spec(**overrides: object) -> FFNSpec:
    base: dict[str, object] = {"variant": "moe", "d_model": D, "d_ff": F, "experts": E, "top_k": 2}
    return FFNSpec(**{**base, **overrides})  # type: ignore[arg-type]


def _x() -> torch.Tensor:
    return torch.randn(2, 5, D, generator=torch.Generator().manual_seed(4))


def _routing(module: MoEFFN, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-2 of the float32 softmax of the router, renormalised: (weights, chosen), each (N, 2)."""
    probs = torch.softmax(x.reshape(-1, D) @ module.router.weight.T, dim=-1)
    weights, chosen = torch.topk(probs, 2, dim=-1)
    return weights / weights.sum(-1, keepdim=True), chosen


def _ran(module: MoEFFN, x: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    """The output, and the experts whose forward was called, in call order."""
    called: list[int] = []
    hooks = [m.register_forward_hook(lambda *_, e=e: called.append(e)) for e, m in enumerate(module.experts)]
    try:
        with torch.no_grad():
            out = module(x)
    finally:
        for h in hooks:
            h.remove()
    return out, called


@pytest.mark.parametrize("dispatch", ["by_expert", "sorted"])
def test_only_the_experts_some_token_chose_run(dispatch: str) -> None:
    spec = _spec()
    reference = build_ffn(spec, seed=1).eval()
    variant = VARIANTS["moe"]
    assert isinstance(variant, MixtureVariant)
    module = MoEFFN(spec, variant, dispatch=dispatch)  # type: ignore[arg-type]
    module.load_state_dict(reference.state_dict())
    module.eval()
    x = _x()
    out, called = _ran(module, x)
    weights, chosen = _routing(module, x)
    counts = torch.bincount(chosen.reshape(-1), minlength=E).tolist()
    assert 0 in counts  # 20 (token, expert) pairs over 16 experts: some get none
    assert called == [e for e, n in enumerate(counts) if n]
    assert module.last_dispatch is not None and module.last_dispatch.tokens_per_expert == counts
    # A dense reference: every expert on every token, weighted by its routing weight (0 if not chosen).
    tokens = x.reshape(-1, D)
    dense = torch.zeros(tokens.shape[0], E).scatter(1, chosen, weights)
    with torch.no_grad():
        expected = sum(dense[:, e : e + 1] * module.experts[e](tokens) for e in range(E))
    torch.testing.assert_close(out.reshape(-1, D), expected)


def test_capacity_keeps_every_experts_count_and_drops() -> None:
    spec = _spec(capacity_factor=0.5)  # ceil(0.5 · 10 · 2 / 16) = 1 row per expert
    module = build_ffn(spec, seed=1).eval()
    assert isinstance(module, MoEFFN)
    x = _x()
    _, called = _ran(module, x)
    _, chosen = _routing(module, x)
    counts = torch.bincount(chosen.reshape(-1), minlength=E).tolist()
    stats = module.last_dispatch
    assert stats is not None and stats.capacity == 1
    assert stats.tokens_per_expert == [min(n, 1) for n in counts]
    assert stats.dropped == sum(max(n - 1, 0) for n in counts) > 0
    assert called == [e for e, n in enumerate(counts) if n]


def test_on_meta_the_balanced_shares_decide_which_run() -> None:
    experts = 64
    module = build_ffn(_spec(experts=experts), device="meta")
    assert isinstance(module, MoEFFN)
    _, called = _ran(module, torch.empty(2, 5, D, device="meta"))
    shares = [balanced_share(2 * 5 * 2, experts, e) for e in range(experts)]
    assert called == list(range(20)) == [e for e, n in enumerate(shares) if n]
    assert module.last_dispatch is not None and module.last_dispatch.tokens_per_expert == shares


def _render(result: object, width: int = 80) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(trace_view(result))  # type: ignore[arg-type]
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_a_few_experts_with_idle_ones_show_every_one_that_ran_and_one_idle_row() -> None:
    result = trace(_spec(), seed=1, backward=True)
    summary = summarise_experts(result.steps)
    assert summary is not None and summary.idle and summary.elided == 0
    ran = [s.name for s in result.steps if s.substeps]
    assert ran == [f"experts.{e}" for e, n in enumerate(summary.tokens) if n]
    text = _render(result, width=160)
    steps_table = text.split("Shape flow, step by step", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"experts\.(\d+)\b", steps_table))
    assert named == {name.split(".")[1] for name in ran}  # no row for an expert that got no token
    assert "(0, 16)" not in text
    idle = f"{summary.idle} idle expert{'s' if summary.idle > 1 else ''}"
    label = f"idle expert{'s' if summary.idle > 1 else ''}"
    pattern = rf"{label}\s+{summary.idle} experts? got no token and did not run\s+{fmt_count(summary.idle_params)}\s+0\s*$"
    assert re.search(pattern, steps_table, re.M)
    total = re.search(r"total\s+([\d,]+)\s+[\d,]+\s*$", steps_table, re.M)
    assert total is not None and int(total.group(1).replace(",", "")) == result.total_params
    assert summary.idle_params == summary.idle * 3 * D * F
    stats_table = text.split("Values at each step", 1)[1].split("\n\n", 1)[0]
    assert re.search(rf"^{label}\s.*{summary.idle} experts? got no token and did not run", stats_table, re.M)
    assert set(re.findall(r"^experts\.(\d+)\s", stats_table, re.M)) == named
    # Their parameters got no gradient: one row in the backward's parameter table.
    assert f"{3 * summary.idle} parameters of {idle}" in text
    assert result.backward is not None
    assert sum(1 for p in result.backward.params if p.step is None) == 3 * summary.idle
