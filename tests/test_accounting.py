from __future__ import annotations

import pytest
import torch
from hypothesis import given
from torch.utils.flop_counter import FlopCounterMode

from ffn_cli import build_ffn
from ffn_cli.accounting import (
    activation_bytes,
    active_params,
    flop_steps,
    matmul_flops_formula,
    matmul_flops_per_token,
    param_formula,
    param_tensors,
    total_params,
)
from ffn_cli.spec import FFNSpec
from tests.helpers import ALL_VARIANTS, small_spec, specs


def test_tutorial_parameter_counts() -> None:
    spec = FFNSpec(variant="relu", d_model=512, d_ff=2048)
    counts = {t.name: t.count for t in param_tensors(spec)}
    assert counts["up_proj.weight"] + counts["up_proj.bias"] == 1_050_624
    assert counts["down_proj.weight"] + counts["down_proj.bias"] == 1_049_088
    assert total_params(spec) == 2_099_712


@given(specs())
def test_accounting_matches_the_built_module(spec: FFNSpec) -> None:
    module = build_ffn(spec, device="meta")
    assert total_params(spec) == sum(p.numel() for p in module.parameters())
    assert {t.name: t.shape for t in param_tensors(spec)} == {n: tuple(p.shape) for n, p in module.named_parameters()}


@given(specs(variants=[v for v in ALL_VARIANTS if v != "moe"]))
def test_matmul_flops_match_flop_counter_mode(spec: FFNSpec) -> None:
    module = build_ffn(spec).eval()
    x = torch.randn(2, 3, spec.d_model)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        module(x)
    assert counter.get_total_flops() == 6 * matmul_flops_per_token(spec)


@given(specs(variants=["moe"]))
def test_routed_moe_flops_match_flop_counter_mode(spec: FFNSpec) -> None:
    # Without a capacity limit every token reaches exactly top_k experts, whatever the routing.
    module = build_ffn(spec).eval()
    x = torch.randn(3, 5, spec.d_model)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        module(x)
    assert counter.get_total_flops() == 15 * matmul_flops_per_token(spec)


def test_active_params_of_top_k_moe() -> None:
    spec = FFNSpec(variant="moe", d_model=4096, d_ff=14336, experts=8, top_k=2)
    expert = 3 * 4096 * 14336
    assert total_params(spec) == 8 * expert + 8 * 4096
    assert active_params(spec) == 2 * expert + 8 * 4096
    # the soft mixture runs every expert
    soft = spec.with_(variant="soft_moe")
    assert active_params(soft) == total_params(soft)


def _evaluate(formula: str, spec: FFNSpec) -> int:
    """A closed form such as 'E·d + E·(3·d·d_ff + 2·d_ff + d) + shared(3·d·d_sh)' as a number."""
    text = formula.replace("shared(", "(").replace("·", "*")
    names = {"d_ff": spec.hidden, "d_sh": spec.shared_hidden, "d": spec.d_model, "E": spec.experts, "k": spec.top_k}
    return int(eval(text, {"__builtins__": {}}, names))


@given(specs())
def test_param_formula_evaluates_to_the_module_count(spec: FFNSpec) -> None:
    module = build_ffn(spec, device="meta")
    assert _evaluate(param_formula(spec), spec) == sum(p.numel() for p in module.parameters())


@given(specs())
def test_matmul_formula_evaluates_to_flop_counter_mode(spec: FFNSpec) -> None:
    module = build_ffn(spec).eval()
    x = torch.randn(3, spec.d_model)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        module(x)
    assert _evaluate(matmul_flops_formula(spec), spec) * 3 == counter.get_total_flops()


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        # d = 16, d_ff = 64, biases; per token: a matmul of (d_in → d_out) is 2·d_in·d_out,
        # a bias one add per output, relu 1 FLOP per element, silu 5 (z·σ(z): neg, exp, add,
        # div, mul), the gate's product 1.
        ("relu", [("up_proj", 2 * 16 * 64, 64), ("activation", 0, 64), ("down_proj", 2 * 64 * 16, 16)]),
        (
            "swiglu",
            [
                ("gate_proj", 2 * 16 * 64, 64),
                ("up_proj", 2 * 16 * 64, 64),
                ("activation", 0, 5 * 64),
                ("multiply", 0, 64),
                ("down_proj", 2 * 64 * 16, 16),
            ],
        ),
    ],
)
def test_steps_are_the_hand_counted_ones(variant: str, expected: list[tuple[str, int, int]]) -> None:
    spec = FFNSpec(variant=variant, d_model=16, d_ff=64, bias=True)
    assert [(s.name, s.matmul_flops, s.elementwise_flops) for s in flop_steps(spec)] == expected


@pytest.mark.parametrize(
    ("spec", "formula", "value"),
    [
        (FFNSpec(variant="relu", d_model=512), "2·d·d_ff + d_ff + d", 2 * 512 * 2048 + 2048 + 512),
        (FFNSpec(variant="swiglu", d_model=4096), "3·d·d_ff", 3 * 4096 * 11008),
        (FFNSpec(variant="geglu", d_model=64, d_ff=96, bias=True), "3·d·d_ff + 2·d_ff + d", 3 * 64 * 96 + 2 * 96 + 64),
        (FFNSpec(variant="moe", d_model=64, d_ff=32, experts=4), "E·d + E·(3·d·d_ff)", 4 * 64 + 4 * 3 * 64 * 32),
    ],
)
def test_closed_form_formula(spec: FFNSpec, formula: str, value: int) -> None:
    assert param_formula(spec) == formula
    assert total_params(spec) == value


def _saved_bytes(module: torch.nn.Module, x: torch.Tensor) -> int:
    """Bytes of the distinct storages autograd saves for backward, parameters and buffers excluded."""
    params = {p.untyped_storage().data_ptr() for p in [*module.parameters(), *module.buffers()]}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            seen[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(x)
    return sum(seen.values())


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_activation_bytes_equal_what_autograd_saves(variant: str, dtype: str) -> None:
    """Every variant, MoE included: the router's float32 probabilities, int64 indices and bool
    masks at their own widths, the expert outputs the weighting multiply keeps."""
    spec = small_spec(variant, bias=True, shared_expert_gate=variant == "moe")
    module = build_ffn(spec, dtype=dtype).eval()
    x = torch.randn(7, spec.d_model, dtype=getattr(torch, dtype), requires_grad=True)
    assert _saved_bytes(module, x) == activation_bytes(spec, 7, dtype)
