"""The measured profile against a bare torch loop timed here, and its shape."""

from __future__ import annotations

import time

import torch

from ffn_cli.benchmark.measure import MeasurePlan, measure_device, run_passes
from ffn_cli.costs.forward_ops import priced_variants
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
    bare = min(samples)  # the fastest call, as the profile keeps its fastest pass: the least touched by a busy machine
    # Cold cache (the profile) against hot (here), measured at different moments of a shared
    # machine: the same unit and order of magnitude (a ms-for-s slip is a factor of 1,000).
    assert 0.02 < point.seconds / bare < 50
    assert len(profile.gemm["fp32"]) == 2  # the full grid: every (M, N, K) of the plan
    assert set(profile.ffn_call_s) == set(priced_variants(VARIANTS))
    assert all(v >= 0 for v in profile.ffn_call_s.values())
    assert profile.copy_gbps > 0 and profile.op_call_s > 0


def test_each_point_keeps_its_fastest_pass_and_says_how_far_the_slowest_was() -> None:
    # Two points whose times differ by pass (a slow spell in pass 2 for "a", in pass 1 for "b").
    times = {"a": iter([2.0, 3.0, 2.5]), "b": iter([4.0, 1.0, 1.0])}
    order: list[str] = []
    tasks = [(name, lambda name=name: {name: next(times[name])}) for name in ("a", "b")]
    best = run_passes(tasks, 3, order.append)
    assert best == {"a": (2.0, 0.5), "b": (1.0, 3.0)}
    assert order == ["a (1/3)", "b (1/3)", "a (2/3)", "b (2/3)", "a (3/3)", "b (3/3)"]  # whole passes, in order


def test_a_profile_in_passes_records_them_and_its_spread(one_thread: None) -> None:
    plan = MeasurePlan(("fp32",), (16,), (256,), (256,), (1 << 12,), 0.005, passes=2)
    profile = measure_device(torch.device("cpu"), quick=True, plan=plan)
    assert profile.passes == 2
    (point,) = profile.gemm["fp32"]
    assert point.spread >= 0 and len(profile.spreads()) == 1 + len(profile.elementwise["fp32"])
