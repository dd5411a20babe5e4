"""The torch modules against the independent NumPy float64 reference, on the same weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ffn_cli import build_ffn
from ffn_cli.reference import reference_forward
from ffn_cli.spec import FFNSpec
from tests.helpers import ALL_VARIANTS, small_spec, specs


def _relative_error(spec: FFNSpec, dtype: torch.dtype, seed: int = 0) -> float:
    module = build_ffn(spec, dtype=dtype, seed=seed).eval()
    x = torch.randn(2, 5, spec.d_model, dtype=dtype, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        out = module(x).double().numpy()
    weights = {name: t.double().numpy() for name, t in module.state_dict().items()}
    expected = reference_forward(spec, weights, x.double().numpy())
    return float(np.abs(out - expected).max() / max(np.abs(expected).max(), 1e-300))


@given(specs(), st.integers(0, 2**16))
def test_float64_matches_the_reference_to_1e12(spec: FFNSpec, seed: int) -> None:
    assert _relative_error(spec, torch.float64, seed) < 1e-12


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_float32_matches_the_reference_to_1e5(variant: str) -> None:
    assert _relative_error(small_spec(variant), torch.float32) < 1e-5


@pytest.mark.parametrize("capacity_factor", [0.25, 1.0])
def test_capacity_dropping_matches_the_reference(capacity_factor: float) -> None:
    spec = FFNSpec(variant="moe", d_model=12, d_ff=20, experts=4, top_k=2, capacity_factor=capacity_factor)
    assert _relative_error(spec, torch.float64) < 1e-12


@pytest.mark.parametrize("capacity_factor", [None, 0.25])
def test_a_latent_moe_matches_the_reference(capacity_factor: float | None) -> None:
    # Experts of width 8 read and write between a 12 → 8 and an 8 → 12 projection (Nemotron 3's).
    spec = FFNSpec(variant="moe", d_model=12, d_ff=20, experts=4, top_k=2, shared_experts=1, expert_variant="relu2",
                   capacity_factor=capacity_factor, latent=8)  # fmt: skip
    assert _relative_error(spec, torch.float64) < 1e-12


def test_tutorial_numpy_style() -> None:
    """The first tutorial's computation, written out: relu(x @ W1 + b1) @ W2 + b2."""
    rng = np.random.default_rng(42)
    x, w1, b1, w2, b2 = (
        rng.standard_normal((7, 8)),
        rng.standard_normal((8, 32)),
        rng.standard_normal(32),
        rng.standard_normal((32, 8)),
        rng.standard_normal(8),
    )
    spec = FFNSpec(variant="relu", d_model=8, d_ff=32)
    weights = {"up_proj.weight": w1.T, "up_proj.bias": b1, "down_proj.weight": w2.T, "down_proj.bias": b2}
    np.testing.assert_allclose(reference_forward(spec, weights, x), np.maximum(0, x @ w1 + b1) @ w2 + b2, rtol=1e-14)
