"""One --seed, independent streams: the trace's values are the data's, not the seed's.

Drawn from one stream, each token of the input correlated with a weight row (ρ ≈ −0.35 at
d_model 512, an 8σ up_proj minimum). The checks here are statistical, against what independent
Gaussian and uniform draws of these sizes give, on the exact tensors the trace uses.
"""

from __future__ import annotations

import math

import pytest
import torch

from ffn_cli.modules import build_ffn
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.backward_run import output_grad_maker
from ffn_cli.tracing.pipeline import make_input
from ffn_cli.tracing.run import trace

DEMO = FFNSpec(variant="relu", d_model=512, d_ff=2048, bias=True)  # `ffn trace` with no options


def _correlations(rows_a: torch.Tensor, rows_b: torch.Tensor) -> torch.Tensor:
    """Pearson correlation of every row of a with every row of b (over the last dimension)."""
    a = rows_a.double() - rows_a.double().mean(-1, keepdim=True)
    b = rows_b.double() - rows_b.double().mean(-1, keepdim=True)
    return (a / a.norm(dim=-1, keepdim=True)) @ (b / b.norm(dim=-1, keepdim=True)).T


def _assert_uncorrelated(rho: torch.Tensor, n: int) -> None:
    """Independent vectors of length n: √n·ρ is about standard normal, so n·mean(ρ²) ≈ 1 within
    a few √(2/N), and the largest |√n·ρ| of N pairs stays below 6 (P ≈ N·2e-9)."""
    z2 = rho.flatten() ** 2 * n
    pairs = z2.numel()
    assert abs(z2.mean().item() - 1) < 5 * math.sqrt(2 / pairs), z2.mean().item()
    assert z2.max().sqrt().item() < 6.0


def test_every_stream_has_its_own_seed_and_keeps_it() -> None:
    seeds = {stream: stream_seed(0, stream) for stream in Stream}
    assert len(set(seeds.values())) == len(Stream)
    assert all(0 <= s < 2**63 for s in seeds.values())
    assert stream_seed(0, Stream.INPUT) != stream_seed(1, Stream.INPUT)
    assert [stream_seed(7, s) for s in Stream] == [stream_seed(7, s) for s in Stream]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_input_is_independent_of_every_weight_row(seed: int) -> None:
    module = build_ffn(DEMO, seed=seed)
    x = make_input((2, 5, 512), torch.device("cpu"), torch.float32, seed).reshape(10, 512)
    _assert_uncorrelated(_correlations(x, module.up_proj.weight.detach()), 512)
    # The down projection's columns live in d_model too: none lines up with a token either.
    _assert_uncorrelated(_correlations(x, module.down_proj.weight.detach().T), 512)


def test_the_output_gradient_is_independent_of_the_input() -> None:
    x = make_input((4, 64, 512), torch.device("cpu"), torch.float32, 0)
    dy = output_grad_maker("random", 0)(x)
    target_grad = output_grad_maker("mse", 0)(torch.zeros_like(x))  # −2t/numel: the target's draw
    _assert_uncorrelated(_correlations(x.reshape(-1, 512), dy.reshape(-1, 512)), 512)
    _assert_uncorrelated(_correlations(dy.reshape(-1, 512), target_grad.reshape(-1, 512)), 512)


def test_the_default_demo_has_the_extremes_of_its_gaussians() -> None:
    """x ~ N(0, 1) and W_up ~ U(±1/√512) (torch's default init), so up_proj's output is about
    normal with variance 512·(1/3·512) + the bias's 1/(3·512); of N values none should pass 5σ."""
    result = trace(DEMO)
    sigma = {"input": 1.0, "up_proj": math.sqrt(1 / 3 + 1 / (3 * 512))}
    stats = {"input": result.input_stats, **{s.name: s.stats for s in result.steps}}
    for name, s in sigma.items():
        assert stats[name] is not None
        assert max(-stats[name].min, stats[name].max) < 5 * s, (name, stats[name])
        assert abs(stats[name].std - s) < 0.05 * s
