"""The torch modules' gradients against the NumPy float64 backward each variant writes by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ffn_cli import build_ffn
from ffn_cli.reference import reference_backward
from ffn_cli.spec import FFNSpec
from tests.helpers import ALL_VARIANTS, small_spec, specs


def _relative(actual: np.ndarray, expected: np.ndarray, floor: float = 1e-300) -> float:
    """Error relative to the gradient's size, or to `floor` when that is larger: a gradient
    that is zero in exact arithmetic (the router's under top-1 renormalised routing, where
    every weight is exactly 1) is held to rounding noise against the other gradients' size."""
    return float(np.abs(actual - expected).max() / max(np.abs(expected).max(), floor))


def _worst_errors(spec: FFNSpec, dtype: torch.dtype, seed: int = 0) -> dict[str, float]:
    """Relative error of dL/dx and of every parameter's gradient, torch vs NumPy."""
    module = build_ffn(spec, dtype=dtype, seed=seed).eval()
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, spec.d_model, dtype=dtype, generator=generator).requires_grad_(True)
    grad_out = torch.randn(2, 5, spec.d_model, dtype=dtype, generator=generator)
    module(x).backward(grad_out)
    weights = {name: t.detach().double().numpy() for name, t in module.state_dict().items()}
    grad_x, grads = reference_backward(spec, weights, x.detach().double().numpy(), grad_out.double().numpy())
    params = dict(module.named_parameters())
    assert set(grads) == set(params), "the NumPy backward names every parameter, and only parameters"
    errors = {"input": _relative(x.grad.double().numpy(), grad_x)}
    floor = 1e-3 * max([float(np.abs(grad_x).max()), *(float(np.abs(g).max(initial=0.0)) for g in grads.values())])
    for name, p in params.items():
        torch_grad = np.zeros(p.shape) if p.grad is None else p.grad.double().numpy()  # None: no token reached it
        assert grads[name].shape == tuple(p.shape), name
        errors[name] = _relative(torch_grad, grads[name], floor)
    return errors


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_float64_gradients_match_the_numpy_backward_to_1e12(variant: str) -> None:
    errors = _worst_errors(small_spec(variant, bias=True, shared_expert_gate=variant == "moe"), torch.float64)
    assert max(errors.values()) < 1e-12, errors


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_float32_gradients_match_the_numpy_backward_to_1e5(variant: str) -> None:
    errors = _worst_errors(small_spec(variant), torch.float32)
    assert max(errors.values()) < 1e-5, errors


@settings(max_examples=40, deadline=None)
@given(specs(), st.integers(0, 2**16))
def test_random_specs_match_in_float64(spec: FFNSpec, seed: int) -> None:
    assert max(_worst_errors(spec, torch.float64, seed).values()) < 1e-12


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("capacity_factor", [None, 0.25])
def test_moe_capacity_and_fused_experts(fused: bool, capacity_factor: float | None) -> None:
    spec = FFNSpec(variant="moe", d_model=12, d_ff=20, experts=4, top_k=2, fused_gate_up=fused, capacity_factor=capacity_factor)
    assert max(_worst_errors(spec, torch.float64).values()) < 1e-12


@pytest.mark.parametrize("expert_variant", ["relu2", "swiglu"])
@pytest.mark.parametrize("capacity_factor", [None, 0.25])
def test_moe_in_a_latent(expert_variant: str, capacity_factor: float | None) -> None:
    # Nemotron 3's latent MoE: experts of width 8 between a 12 → 8 and an 8 → 12 projection, a
    # shared expert at 12; torch's autograd against the NumPy backward written by hand.
    spec = FFNSpec(variant="moe", d_model=12, d_ff=20, experts=4, top_k=2, shared_experts=1, expert_variant=expert_variant,
                   capacity_factor=capacity_factor, latent=8)  # fmt: skip
    errors = _worst_errors(spec, torch.float64)
    assert {"fc1_latent_proj.weight", "fc2_latent_proj.weight"} <= set(errors) and max(errors.values()) < 1e-12, errors


def test_hand_written_relu_backward() -> None:
    """The tutorial's two matmuls differentiated on paper: dW2 = hᵀ·dy, dh = dy·W2ᵀ ⊙ [pre > 0], dW1 = xᵀ·dpre."""
    rng = np.random.default_rng(1)
    x, w1, b1, w2, b2, dy = (rng.standard_normal(s) for s in ((6, 4), (4, 10), (10,), (10, 4), (4,), (6, 4)))
    pre = x @ w1 + b1
    h = np.maximum(0, pre)
    dpre = (dy @ w2.T) * (pre > 0)
    spec = FFNSpec(variant="relu", d_model=4, d_ff=10)
    weights = {"up_proj.weight": w1.T, "up_proj.bias": b1, "down_proj.weight": w2.T, "down_proj.bias": b2}
    grad_x, grads = reference_backward(spec, weights, x, dy)
    np.testing.assert_allclose(grad_x, dpre @ w1.T, rtol=1e-14)
    np.testing.assert_allclose(grads["down_proj.weight"], (h.T @ dy).T, rtol=1e-14)
    np.testing.assert_allclose(grads["up_proj.weight"], (x.T @ dpre).T, rtol=1e-14)
    np.testing.assert_allclose(grads["up_proj.bias"], dpre.sum(axis=0), rtol=1e-14)
