"""The measured profile against a bare torch loop timed here, and its shape."""

from __future__ import annotations

import time

import torch

from ffn_cli.bench.measure import MeasurePlan, measure_device
from ffn_cli.models.forward_ops import priced_variants
from ffn_cli.variants import VARIANTS

PLAN = MeasurePlan(("fp32",), (64,), (256, 512), (256,), (1 << 12,), 0.01)


def test_the_gemm_rate_agrees_with_a_bare_mm_loop(one_thread: None) -> None:
    profile = measure_device(torch.device("cpu"), quick=True, plan=PLAN)
    point = next(p for p in profile.gemm["fp32"] if (p.m, p.n, p.k) == (64, 512, 256))
    x, w = torch.randn(64, 256), torch.randn(512, 256)
    samples = []
    for _ in range(30):
        t0 = time.perf_counter()
        torch.mm(x, w.t())
        samples.append(time.perf_counter() - t0)
    bare = sorted(samples)[len(samples) // 2]
    # Cold cache (the profile) against hot (here), on a shared machine: the same order of magnitude.
    assert 0.1 < point.seconds / bare < 20
    assert len(profile.gemm["fp32"]) == 2  # the full grid: every (M, N, K) of the plan
    assert set(profile.ffn_call_s) == set(priced_variants(VARIANTS))
    assert all(v >= 0 for v in profile.ffn_call_s.values())
    assert profile.copy_gbps > 0 and profile.op_call_s > 0
