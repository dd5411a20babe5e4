from __future__ import annotations

import pytest
import torch

from ffn_cli import build_ffn
from ffn_cli.accounting import param_tensors
from ffn_cli.spec import INIT_SCHEMES, FFNSpec
from tests.helpers import ALL_VARIANTS, small_spec


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_output_shape_equals_input_shape(variant: str) -> None:
    module = build_ffn(small_spec(variant)).eval()
    x = torch.randn(2, 5, 16)
    assert module(x).shape == x.shape


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_dropout_acts_in_train_mode_only(variant: str) -> None:
    module = build_ffn(small_spec(variant, dropout=0.5))
    x = torch.randn(2, 5, 16)
    module.eval()
    assert torch.equal(module(x), module(x))
    module.train()
    assert not torch.equal(module(x), module.eval()(x))


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_parameter_names_are_the_documented_ones(variant: str) -> None:
    spec = small_spec(variant)
    names = [n for n, _ in build_ffn(spec).named_parameters()]
    assert names == [t.name for t in param_tensors(spec)]


@pytest.mark.parametrize(
    ("variant", "names"),
    [  # as Hugging Face checkpoints name them, written out by hand
        ("relu", ["up_proj.weight", "up_proj.bias", "down_proj.weight", "down_proj.bias"]),
        ("swiglu", ["gate_proj.weight", "up_proj.weight", "down_proj.weight"]),
        ("xielu", ["up_proj.weight", "down_proj.weight", "act_fn.alpha_p", "act_fn.alpha_n"]),
    ],
)
def test_parameter_names_are_written_out(variant: str, names: list[str]) -> None:
    spec = FFNSpec(variant=variant, d_model=8, d_ff=16, bias=variant == "relu")
    assert sorted(n for n, _ in build_ffn(spec).named_parameters()) == sorted(names)


def test_hugging_face_names() -> None:
    gated = dict(build_ffn(FFNSpec(variant="swiglu", d_model=8, d_ff=16)).named_parameters())
    assert set(gated) == {"gate_proj.weight", "up_proj.weight", "down_proj.weight"}
    fused = dict(build_ffn(FFNSpec(variant="swiglu", d_model=8, d_ff=16, fused_gate_up=True)).named_parameters())
    assert set(fused) == {"gate_up_proj.weight", "down_proj.weight"}
    moe = dict(build_ffn(FFNSpec(variant="moe", d_model=8, d_ff=16, experts=2, top_k=1, shared_experts=1)).named_parameters())
    assert {"router.weight", "experts.1.down_proj.weight", "shared_experts.gate_proj.weight"} <= set(moe)


def test_fused_layout_puts_the_gate_first() -> None:
    spec = FFNSpec(variant="swiglu", d_model=8, d_ff=16)
    split = build_ffn(spec, dtype=torch.float64)
    fused = build_ffn(spec.with_(fused_gate_up=True), dtype=torch.float64)
    with torch.no_grad():
        fused.gate_up_proj.weight.copy_(torch.cat([split.gate_proj.weight, split.up_proj.weight]))
        fused.down_proj.weight.copy_(split.down_proj.weight)
    x = torch.randn(3, 8, dtype=torch.float64)
    torch.testing.assert_close(fused(x), split(x))


@pytest.mark.parametrize("init", INIT_SCHEMES)
def test_init_schemes(init: str) -> None:
    spec = FFNSpec(variant="relu", d_model=256, d_ff=1024, init=init)
    module = build_ffn(spec)
    std = module.up_proj.weight.std().item()
    expected = {
        "default": (1 / 3) ** 0.5 / 256**0.5,  # kaiming_uniform(a=√5): U(±1/√fan_in)
        "xavier_normal": 2**0.5 * (2 / (256 + 1024)) ** 0.5,
        "kaiming_normal": (2 / 256) ** 0.5,
        "normal": 0.02,
    }[init]
    assert std == pytest.approx(expected, rel=0.05)
    if init != "default":
        assert torch.count_nonzero(module.up_proj.bias) == 0


def test_zero_initialised_output_projection_gives_zero_output() -> None:
    module = build_ffn(FFNSpec(variant="swiglu", d_model=16, zero_init_output=True))
    assert torch.count_nonzero(module(torch.randn(4, 16))) == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_builds_in_any_float_dtype(dtype: torch.dtype) -> None:
    module = build_ffn(small_spec("swiglu"), dtype=dtype)
    assert all(p.dtype == dtype for p in module.parameters())
    assert module(torch.randn(2, 16, dtype=dtype)).dtype == dtype


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_meta_device_allocates_nothing_and_keeps_shapes(variant: str) -> None:
    module = build_ffn(small_spec(variant), device="meta")
    assert all(p.is_meta for p in module.parameters())
    assert module(torch.empty(2, 3, 16, device="meta")).shape == (2, 3, 16)


def test_same_seed_same_weights() -> None:
    spec = small_spec("moe")
    a, b = build_ffn(spec, seed=3), build_ffn(spec, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


@pytest.mark.parametrize("variant", ["relu", "swiglu", "moe"])
def test_gradient_checkpointing_keeps_gradients(variant: str) -> None:
    spec = small_spec(variant)
    plain, ckpt = build_ffn(spec, dtype=torch.float64), build_ffn(spec, dtype=torch.float64)
    ckpt.gradient_checkpointing = True
    x = torch.randn(2, 3, 16, dtype=torch.float64)
    plain(x).square().sum().backward()
    ckpt(x).square().sum().backward()
    for p, q in zip(plain.parameters(), ckpt.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad)


def test_capacity_factor_drops_overflow_tokens() -> None:
    spec = FFNSpec(variant="moe", d_model=16, d_ff=8, experts=4, top_k=1, capacity_factor=0.5)
    module = build_ffn(spec)
    module(torch.randn(64, 16))
    stats = module.last_dispatch
    assert stats is not None and stats.capacity == 8
    assert max(stats.tokens_per_expert) <= 8
    assert sum(stats.tokens_per_expert) + stats.dropped == 64


def test_sparse_mask_zeroes_the_requested_fraction() -> None:
    module = build_ffn(FFNSpec(variant="sparse", d_model=8, d_ff=100, sparsity=0.3))
    assert int((module.hidden_mask == 0).sum()) == 30
