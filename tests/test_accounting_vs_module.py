"""The FFN part of `ffn params` against the torch module built from the same spec.

`ffn params` never builds a module; these tests hold its pure-Python count against
sum(p.numel()) of build_ffn(spec, device="meta") — random specs of every layout (MoE with
shared experts of their own width and a shared-expert gate, fused gate_up), the FFNs of every
preset at full size (meta tensors cost no memory), and the --match-params sizes.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ffn_cli import build_ffn
from ffn_cli.accounting import param_tensors, total_params
from ffn_cli.attention import AttentionSpec
from ffn_cli.configs.source import preset_model
from ffn_cli.models.comparison import compare_variants, match_d_ff
from ffn_cli.models.layer import ffn_report
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS
from tests.helpers import EXPERT_VARIANTS, read_preset_names, specs


def _module_params(spec: FFNSpec) -> dict[str, tuple[int, ...]]:
    return {name: tuple(p.shape) for name, p in build_ffn(spec, device="meta").named_parameters()}


def _assert_matches_module(spec: FFNSpec) -> None:
    module = _module_params(spec)
    assert {t.name: t.shape for t in param_tensors(spec)} == module
    assert total_params(spec) == sum(_numel(shape) for shape in module.values())
    report = ffn_report(spec, AttentionSpec(spec.d_model, n_heads=1))
    assert sum(t.count for t in report.tensors) == sum(_numel(shape) for shape in module.values())  # grouped rows lose nothing


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


@st.composite
def moe_specs(draw: st.DrawFn) -> FFNSpec:
    """Top-k MoE with everything a real model uses: own-width shared experts, their gate, fused experts."""
    experts = draw(st.integers(1, 6))
    expert_variant = draw(st.sampled_from(EXPERT_VARIANTS))
    gated = VARIANTS[expert_variant].family == "gated"
    shared = draw(st.integers(0, 3))
    return FFNSpec(
        variant="moe",
        d_model=draw(st.integers(1, 24)),
        d_ff=draw(st.integers(1, 32)),
        bias=draw(st.booleans()),
        experts=experts,
        top_k=draw(st.integers(1, experts)),
        expert_variant=expert_variant,
        fused_gate_up=gated and draw(st.booleans()),
        shared_experts=shared,
        shared_d_ff=draw(st.none() | st.integers(1, 48)) if shared else None,
        shared_expert_gate=shared > 0 and draw(st.booleans()),
    )


@given(specs())
def test_accounting_equals_the_built_module(spec: FFNSpec) -> None:
    _assert_matches_module(spec)


@given(moe_specs())
def test_moe_accounting_equals_the_built_module(spec: FFNSpec) -> None:
    _assert_matches_module(spec)


@pytest.mark.parametrize("name", read_preset_names())
def test_every_preset_ffn_equals_its_module(name: str) -> None:
    model = preset_model(name)
    for ffn in (model.dense_ffn, model.moe_ffn):
        if ffn is not None:
            assert total_params(ffn) == sum(p.numel() for p in build_ffn(ffn, device="meta").parameters())


@given(specs(variants=[v for v in VARIANTS if VARIANTS[v].family != "moe"]), st.integers(1, 5_000), st.sampled_from([1, 8, 64]))
def test_match_d_ff_is_the_nearest_multiple(spec: FFNSpec, target: int, multiple_of: int) -> None:
    sized = match_d_ff(spec, target, multiple_of)
    assert sized.hidden % multiple_of == 0 and sized.hidden >= multiple_of
    miss = abs(total_params(sized) - target)
    for neighbour in (sized.hidden - multiple_of, sized.hidden + multiple_of):
        if neighbour >= 1:
            assert miss <= abs(total_params(sized.with_(d_ff=neighbour)) - target)


def test_match_params_recovers_llamas_11008_from_relu_at_4d() -> None:
    relu, swiglu = FFNSpec(variant="relu", d_model=4096), FFNSpec(variant="swiglu", d_model=4096, d_ff=1)
    comparison = compare_variants([relu, swiglu], AttentionSpec(4096), match_params=True, multiple_of=256)
    assert comparison.target_params == 2 * 4096 * 16384 + 16384 + 4096  # 2·d·4d + biases, by hand
    assert comparison.reports[1].spec.hidden == 11008
    assert abs(comparison.delta(comparison.reports[1]) or 0) < 0.01
