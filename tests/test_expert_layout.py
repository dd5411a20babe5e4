"""A variant's expert layout (`Variant.expert_layout`): the experts it holds, what one token runs
through, held to the built module (its parameters, and which of them one token's backward
reaches); and the `ffn params` report, which shows an active count exactly where there is one."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from ffn_cli import build_ffn
from ffn_cli.cli import app
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS
from tests.helpers import ALL_VARIANTS, small_spec


def _shapes(module: torch.nn.Module, prefix: str = "") -> dict[str, tuple[int, ...]]:
    return {n.removeprefix(prefix): tuple(p.shape) for n, p in module.named_parameters() if n.startswith(prefix)}


def _reached(module: torch.nn.Module, token: torch.Tensor) -> set[str]:
    """The parameters one token's backward gives a non-zero gradient."""
    module.zero_grad(set_to_none=True)
    module(token.reshape(1, 1, -1)).square().sum().backward()
    return {n for n, p in module.named_parameters() if p.grad is not None and bool(p.grad.abs().sum() > 0)}


def _experts_of(names: set[str]) -> set[str]:
    return {n.split(".")[1] for n in names if n.startswith("experts.")}


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_the_expert_layout_is_what_the_built_module_holds_and_runs(variant: str) -> None:
    spec = small_spec(variant, shared_d_ff=40) if variant == "moe" else small_spec(variant)
    layout = VARIANTS[variant].expert_layout(spec)
    torch.manual_seed(0)
    module = build_ffn(spec)
    names = set(_shapes(module))
    tokens = torch.randn(6, spec.d_model, generator=torch.Generator().manual_seed(4))
    if layout is None:  # one FFN: no experts, and every parameter runs on every token
        assert not _experts_of(names)
        for token in tokens:
            assert _reached(module, token) == names
        return
    assert len(_experts_of(names)) == layout.experts
    one = FFNSpec(variant=layout.expert_variant, d_model=spec.d_model, d_ff=spec.hidden, bias=bool(spec.bias))
    assert _shapes(module, "experts.0.") == _shapes(build_ffn(one))
    shared = _shapes(module, "shared_experts.")
    assert shared == (_shapes(build_ffn(one.with_(d_ff=layout.shared_hidden))) if layout.shared_hidden else {})
    for token in tokens:
        reached = _reached(module, token)
        assert len(_experts_of(reached)) == layout.active_experts
        assert {n.removeprefix("shared_experts.") for n in reached if n.startswith("shared_experts.")} == set(shared)


def test_a_routed_layout_names_its_top_k_and_a_soft_one_runs_every_expert() -> None:
    moe = FFNSpec(variant="moe", d_model=16, d_ff=24, experts=6, top_k=3, expert_variant="gelu", shared_experts=2)
    layout = VARIANTS["moe"].expert_layout(moe)
    assert (layout.experts, layout.expert_variant, layout.top_k, layout.active_experts, layout.shared_hidden) == (6, "gelu", 3, 3, 48)
    soft = VARIANTS["soft_moe"].expert_layout(FFNSpec(variant="soft_moe", d_model=16, d_ff=24, experts=5, top_k=2))
    assert (soft.experts, soft.top_k, soft.active_experts, soft.shared_hidden) == (5, None, 5, 0)


def _params(*args: str) -> tuple[str, dict[str, object]]:
    runner = CliRunner()
    table = runner.invoke(app, ["params", *args], env={"COLUMNS": "120"})
    data = runner.invoke(app, ["params", *args, "--json"])
    assert table.exit_code == 0 and data.exit_code == 0, table.output + data.output
    return " ".join(table.stdout.split()), json.loads(data.stdout)


def _built(spec: FFNSpec, prefix: str = "") -> int:
    return sum(p.numel() for n, p in build_ffn(spec, device="meta").named_parameters() if n.startswith(prefix))


@pytest.mark.parametrize(
    ("args", "spec", "says"),
    [
        (("-v", "relu", "-d", "64"), FFNSpec(variant="relu", d_model=64), None),
        (("-v", "soft_moe", "-d", "64", "-E", "4"), FFNSpec(variant="soft_moe", d_model=64, experts=4), "every expert runs"),
        (("-v", "moe", "-d", "64", "-E", "4", "-k", "1"), FFNSpec(variant="moe", d_model=64, experts=4, top_k=1), "router, k experts"),
        (
            ("-v", "moe", "-d", "64", "-E", "4", "--shared-experts", "1"),
            FFNSpec(variant="moe", d_model=64, experts=4, shared_experts=1),
            "router, k experts, shared experts",
        ),
    ],
)
def test_the_report_shows_an_active_count_where_a_token_runs_part_of_the_ffn(
    args: tuple[str, ...], spec: FFNSpec, says: str | None
) -> None:
    """The active figure is the built module's parameters less the experts a token skips."""
    table, data = _params(*args)
    total = _built(spec)
    assert data["total_params"] == total
    if says is None:
        assert "active per token" not in table
        assert "(active" not in table
        assert "ffn_active_attention_ratio" not in data and "all_experts_flops_per_token" not in data
        return
    skipped = (spec.experts - (spec.top_k if spec.variant == "moe" else spec.experts)) * _built(spec, "experts.0.")
    active = total - skipped
    assert data["active_params"] == active
    assert f"active per token {active:,} {100 * active / total:.1f}%: {says} " in table
    assert data["ffn_active_attention_ratio"] == pytest.approx(active / data["attention_params"])
    assert f"{spec.experts} × swiglu" in table
    assert (f"top-{spec.top_k}" in table) == (spec.variant == "moe")
    assert (data["all_experts_flops_per_token"] is None) == (spec.variant == "soft_moe")
