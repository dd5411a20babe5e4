"""The histogram each step's statistics carry (the page draws it), held against numpy.histogram
on the same float64 values: one chunk and many, with NaN, Inf, a spike of zeros and one value only."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ffn_cli.tracing import stats as stats_module
from ffn_cli.tracing.result import HISTOGRAM_BINS
from ffn_cli.tracing.stats import tensor_stats

pytestmark = pytest.mark.usefixtures("one_thread")

CHUNK = stats_module.CHUNK_ELEMENTS["cpu"]


def _numpy_histogram(t: torch.Tensor) -> tuple[list[int], list[float]]:
    a = t.detach().cpu().to(torch.float64).numpy().ravel()
    finite = a[np.isfinite(a)]
    counts, edges = np.histogram(finite, bins=HISTOGRAM_BINS, range=(finite.min(), finite.max()))
    return counts.tolist(), edges.tolist()


def _assert_histogram(t: torch.Tensor) -> None:
    got = tensor_stats(t)
    counts, edges = _numpy_histogram(t)
    assert got is not None and got.histogram is not None
    assert list(got.histogram) == counts
    assert got.histogram_edges == edges  # the very floats numpy bins by
    assert sum(got.histogram) == got.numel - got.nan - got.inf


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("numel", [7, CHUNK, 3 * CHUNK + 12345])
def test_histogram_matches_numpy(dtype: torch.dtype, numel: int) -> None:
    g = torch.Generator().manual_seed(numel)
    _assert_histogram(torch.randn(numel, generator=g, dtype=torch.float64).to(dtype))


@pytest.mark.parametrize("numel", [1000, 2 * CHUNK + 5])
def test_relu_spike_nan_and_inf(numel: int) -> None:
    g = torch.Generator().manual_seed(1)
    t = torch.relu(torch.randn(numel, generator=g))
    t[5], t[numel - 2] = float("nan"), float("inf")
    _assert_histogram(t)
    got = tensor_stats(t)
    assert got is not None and got.histogram is not None and got.histogram[0] >= got.zeros  # the zeros in the first bin


def test_one_value_lies_in_the_middle_bin_as_numpy_puts_it() -> None:
    _assert_histogram(torch.full((CHUNK + 9,), 3.0))
    _assert_histogram(torch.full((10,), -2.0))


def test_no_finite_value_no_histogram() -> None:
    for n in (10, CHUNK + 3):
        got = tensor_stats(torch.full((n,), float("nan")))
        assert got is not None and got.histogram is None


def test_histogram_is_not_part_of_equality_nor_json() -> None:
    from ffn_cli.render.trace import _stats_data

    got = tensor_stats(torch.arange(10.0))
    assert got is not None and got.histogram is not None
    from dataclasses import replace

    assert replace(got, histogram=None) == got
    assert "histogram" not in (_stats_data(got) or {})


@pytest.mark.cuda
def test_histogram_on_cuda_matches_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small chunks, so that several are binned on the device and added up, NaN and Inf among them.
    monkeypatch.setattr(stats_module, "DEVICE_CHUNK_ELEMENTS", 1 << 12)
    g = torch.Generator().manual_seed(7)
    t = torch.randn(5 * (1 << 12) + 7, generator=g).cuda()
    _assert_histogram(t)
    t[3], t[9000] = float("nan"), float("inf")
    _assert_histogram(t)
