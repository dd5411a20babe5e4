"""Value statistics held against NumPy in float64 (the mean and std over the finite values,
with math.fsum for the sums), on tensors of one chunk and of many, with NaN, Inf, zeros and
subnormals, in every floating dtype the trace runs in."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ffn_cli.tracing import stats as stats_module
from ffn_cli.tracing.stats import tensor_stats

pytestmark = pytest.mark.usefixtures("one_thread")

CHUNK = stats_module.CHUNK_ELEMENTS["cpu"]


def _numpy_stats(t: torch.Tensor) -> dict[str, float]:
    """The same statistics from NumPy float64, each sum exactly rounded (math.fsum)."""
    a = t.detach().cpu().to(torch.float64).numpy().ravel()
    finite = a[np.isfinite(a)]
    tiny = float(torch.finfo(t.dtype).tiny)
    mean = math.fsum(finite) / finite.size
    return {
        "mean": mean,
        "std": math.sqrt(math.fsum((finite - mean) ** 2) / finite.size),
        "min": float(finite.min()),
        "max": float(finite.max()),
        "zeros": int((a == 0).sum()),
        "negatives": int((a < 0).sum()),
        "nan": int(np.isnan(a).sum()),
        "inf": int(np.isinf(a).sum()),
        "subnormal": int(((a != 0) & (np.abs(a) < tiny)).sum()),
    }


def _tensor(numel: int, dtype: torch.dtype, *, scale: float = 1.0, shift: float = 0.0, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(numel, generator=g, dtype=torch.float64) * scale + shift).to(dtype)


def _assert_matches_numpy(t: torch.Tensor) -> None:
    got = tensor_stats(t)
    want = _numpy_stats(t)
    assert got is not None and got.numel == t.numel()
    for name in ("zeros", "negatives", "nan", "inf", "subnormal", "min", "max"):
        assert getattr(got, name) == want[name], name
    # Far beyond the 4 significant digits the table shows: float64 accumulation throughout.
    scale = want["std"] + abs(want["mean"])
    assert got.mean == pytest.approx(want["mean"], rel=1e-12, abs=1e-13 * scale)
    assert got.std == pytest.approx(want["std"], rel=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("numel", [1, 7, CHUNK, CHUNK + 1, 3 * CHUNK + 12345])
def test_stats_match_numpy_float64(dtype: torch.dtype, numel: int) -> None:
    _assert_matches_numpy(_tensor(numel, dtype, seed=numel))


@pytest.mark.parametrize("numel", [1000, 2 * CHUNK + 5])
def test_a_mean_far_below_the_spread_keeps_its_digits(numel: int) -> None:
    # Gate outputs: mean ~1e-5 of a std ~0.2; a float32 sum would lose the mean's digits.
    _assert_matches_numpy(_tensor(numel, torch.float32, scale=0.18, shift=-1e-5))
    # And a mean far above the spread: the chunks' means must combine without cancellation.
    _assert_matches_numpy(_tensor(numel, torch.float32, scale=1e-3, shift=1e3))


@pytest.mark.parametrize("numel", [1000, 2 * CHUNK + 5])
def test_nan_inf_zeros_and_negatives_are_counted(numel: int) -> None:
    t = torch.relu(_tensor(numel, torch.float32, seed=3))  # half zeros
    t[::97] = -t[::97] - 1
    t[5], t[numel - 2], t[numel // 2] = float("nan"), float("inf"), -float("inf")
    _assert_matches_numpy(t)


@pytest.mark.parametrize("numel", [1000, 2 * CHUNK + 5])
def test_float16_subnormals_are_counted(numel: int) -> None:
    t = _tensor(numel, torch.float16, scale=1e-5, seed=4)  # most below float16's smallest normal
    got = tensor_stats(t)
    assert got is not None and got.subnormal > numel // 2
    _assert_matches_numpy(t)


def test_all_nan_has_no_moments() -> None:
    got = tensor_stats(torch.full((CHUNK + 3,), float("nan")))
    assert got is not None and got.nan == CHUNK + 3
    assert all(math.isnan(v) for v in (got.mean, got.std, got.min, got.max))


def test_one_chunk_is_exactly_torch_std_mean_in_float64() -> None:
    # Small tensors keep the very bits the JSON showed before statistics went chunked.
    t = _tensor(CHUNK, torch.float32, seed=5)
    std, mean = torch.std_mean(t.double(), correction=0)
    got = tensor_stats(t)
    assert got is not None and (got.mean, got.std) == (float(mean), float(std))


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_stats_on_cuda_match_numpy(dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    # Small chunks, so that several are combined on the device, with NaN and Inf among them.
    monkeypatch.setattr(stats_module, "DEVICE_CHUNK_ELEMENTS", 1 << 12)
    t = _tensor(5 * (1 << 12) + 7, dtype, seed=6).cuda()
    _assert_matches_numpy(t)
    t[3], t[9000] = float("nan"), float("inf")
    _assert_matches_numpy(t)
