"""`ffn hardware --measure`: time this device → DeviceProfile (the torch side of the profile).

GEMMs: `F.linear` over a grid of (M, N, K), each call after a flush of the last-level cache
(cold, as `ffn bench` times by default), median of several calls. Elementwise ops: each
activation of the registry as its torch form runs it, the gate multiply and a bias add, over a
grid of sizes, on warm data (an FFN's elementwise pass reads what its GEMM just wrote). Copy:
the best call over a buffer far larger than the cache. Fixed costs: one op on a one-element
tensor, and one call of each priced variant's module at a tiny width less its ops' dispatch.

Everything but the copy is measured in passes over the whole plan, each point once per pass in
the same order, so that the passes are seconds apart: a point keeps its fastest pass (a spell of
load elsewhere only ever slows a call) and how much slower its slowest was (`spread`), so a
profile says how steady the machine was while it was measured. Progress is reported between
measurements, never during one.
"""

from __future__ import annotations

import datetime
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from ffn_cli.benchmark.timing import CallFn, cache_flush_bytes, collector_paused, first_call_s, time_calls
from ffn_cli.costs.forward_ops import forward_ops, priced_variants
from ffn_cli.hardware.cpu import cpu_memory_bytes, cpu_name
from ffn_cli.hardware.profile import PROFILE_NAME, DeviceProfile, ElementwisePoint, GemmPoint
from ffn_cli.modules import build_ffn
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import ACTIVATIONS, VARIANTS, Activation

__all__ = ["MeasurePlan", "Task", "measure_device", "plan_for", "run_passes"]

ProgressFn = Callable[[int, int, str], None]
# One measurement of a pass: its progress label, and what it times (key → seconds).
# What a measured point is filed under: ("gemm", dtype, m, n, k), ("elementwise", dtype, op, elements), ("op",), ("ffn", variant).
PointKey = tuple[Any, ...]
Task = tuple[str, Callable[[], dict[PointKey, float]]]
_TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class MeasurePlan:
    dtypes: tuple[str, ...]
    ms: tuple[int, ...]
    ns: tuple[int, ...]
    ks: tuple[int, ...]
    sizes: tuple[int, ...]  # elementwise outputs
    budget_s: float  # timed calls per point fill about this long (at least MIN_CALLS)
    passes: int = 1  # over the whole plan; each point keeps its fastest

    @property
    def gemm_points(self) -> int:
        return len(self.dtypes) * len(self.ms) * len(self.ns) * len(self.ks)


# Enough calls for a steady median; beyond some 50 a cold call's cache flush is most of the time.
MIN_CALLS, MAX_CALLS = 3, 50


def plan_for(device: torch.device, *, quick: bool) -> MeasurePlan:
    """The grid: M from one token (decode) to prefill-sized, N and K from narrow to wide."""
    if device.type == "cuda":
        dtypes = ("bf16",) if quick else ("fp32", "bf16", "fp16")
        ms = (1, 16, 256, 4096) if quick else (1, 8, 64, 512, 4096, 16384)
        ns = ks = (1024, 8192) if quick else (1024, 4096, 16384)
        sizes = (1 << 12, 1 << 18, 1 << 24) if quick else (1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26)
        return MeasurePlan(dtypes, ms, ns, ks, sizes, 0.02 if quick else 0.05, 1 if quick else 2)
    if quick:
        return MeasurePlan(("fp32",), (1, 16, 256), (256, 2048), (256, 2048), (1 << 10, 1 << 16, 1 << 22), 0.02)
    return MeasurePlan(
        ("fp32",),  # bf16 GEMMs crawl on most CPUs: over a minute alone
        (1, 4, 16, 64, 256, 1024),
        (256, 1024, 4096),
        (256, 1024, 4096),
        (1 << 8, 1 << 12, 1 << 16, 1 << 20, 1 << 23),
        0.04,
        3,  # a shared CPU's speed drifts by more than the forecast's error over a minute
    )


def _median_s(run: CallFn, prepare: CallFn, device: torch.device, budget_s: float) -> float:
    """One untimed call (it warms and sizes the rest), then the median of enough timed calls."""
    first = first_call_s(run, prepare, device)
    n = max(MIN_CALLS, min(MAX_CALLS, int(budget_s / max(first, 1e-7))))
    samples = sorted(time_calls(run, prepare, n, device))
    return samples[len(samples) // 2] * 1e-3


def _gemm_tasks(device: torch.device, dtype: str, plan: MeasurePlan, flush: torch.Tensor | None) -> list[Task]:
    td = _TORCH_DTYPES[dtype]

    def one(m: int, n: int, k: int) -> dict[PointKey, float]:
        gen = torch.Generator(device=device).manual_seed(0)
        x = torch.randn(m, k, generator=gen, device=device, dtype=td)
        w = torch.randn(n, k, generator=gen, device=device, dtype=td)
        seconds = _median_s(lambda i: F.linear(x, w), lambda i: flush.zero_() if flush is not None else None, device, plan.budget_s)
        return {("gemm", dtype, m, n, k): seconds}

    return [(f"GEMM {dtype} {m}×{n}×{k}", functools.partial(one, m, n, k)) for m in plan.ms for n in plan.ns for k in plan.ks]


def _activation_op(act: Activation) -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
    return lambda a, b, bias: act.torch(a)


# Timed calls bound to their operands, each as direct a call as a lambda written in place.
def _op_call(
    op: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor], a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor
) -> CallFn:
    return lambda i: op(a, b, bias)


def _forward_call(module: torch.nn.Module, x: torch.Tensor) -> CallFn:
    return lambda i: module(x)


def _elementwise_ops() -> dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]]:
    """Each op as an FFN runs it: the activations through the registry's own torch forms."""
    ops: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]] = {
        name: _activation_op(act) for name, act in ACTIVATIONS.items() if act.runs_an_op
    }
    ops["mul"] = lambda a, b, bias: a * b
    ops["add"] = lambda a, b, bias: a + bias  # a bias over rows
    return ops


def _elementwise_tasks(device: torch.device, dtype: str, plan: MeasurePlan) -> list[Task]:
    td = _TORCH_DTYPES[dtype]

    def one(size: int) -> dict[PointKey, float]:
        cols = min(size, 1024)
        a = torch.randn(size // cols, cols, device=device, dtype=td)
        b, bias = torch.randn_like(a), torch.randn(cols, device=device, dtype=td)
        return {
            ("elementwise", dtype, name, a.numel()): _median_s(_op_call(op, a, b, bias), lambda i: None, device, plan.budget_s / 4)
            for name, op in _elementwise_ops().items()
        }

    return [(f"elementwise {dtype} {size:,}", functools.partial(one, size)) for size in plan.sizes]


def _copy_gbps(device: torch.device, flush_bytes: int) -> float:
    elems = max(4 * flush_bytes, 64 << 20) // 4
    src = torch.randn(elems, device=device)
    dst = torch.empty_like(src)
    samples = time_calls(lambda i: dst.copy_(src), lambda i: None, 10, device)
    return 2 * elems * 4 / (min(samples) * 1e-3) / 1e9


def _fixed_costs(device: torch.device, budget_s: float) -> dict[PointKey, float]:
    """One op on a one-element tensor, and per priced variant one forward at width 8, one token."""
    one = torch.ones(1, device=device)
    out: dict[PointKey, float] = {("op",): _median_s(lambda i: torch.mul(one, one), lambda i: None, device, budget_s)}
    for name in priced_variants(VARIANTS):
        spec = FFNSpec(variant=name, d_model=8, d_ff=8)
        module = build_ffn(spec, device=device, dtype=torch.float32, seed=0).eval()
        x = torch.randn(1, 8, device=device)
        out[("ffn", name)] = _median_s(_forward_call(module, x), lambda i: None, device, budget_s)
    return out


def run_passes(tasks: Sequence[Task], passes: int, step: Callable[[str], None]) -> dict[PointKey, tuple[float, float]]:
    """Every task once per pass, in the same order: key → (the fastest pass's seconds, how much
    slower the slowest pass was, as a fraction of the fastest)."""
    seen: dict[PointKey, list[float]] = {}
    for number in range(1, passes + 1):
        for label, measure in tasks:
            step(label if passes == 1 else f"{label} ({number}/{passes})")
            for key, seconds in measure().items():
                seen.setdefault(key, []).append(seconds)
    return {key: (min(s), max(s) / min(s) - 1 if min(s) > 0 else 0.0) for key, s in seen.items()}


def measure_device(
    device: torch.device, *, quick: bool, on_progress: ProgressFn | None = None, plan: MeasurePlan | None = None
) -> DeviceProfile:
    """Measure everything a profile holds on `device` (threads as torch has them now); `plan`
    replaces the grid plan_for chooses."""
    started = time.perf_counter()
    plan = plan or plan_for(device, quick=quick)
    flush_bytes = cache_flush_bytes(device, "cold")
    flush = torch.empty(flush_bytes // 4, device=device) if flush_bytes else None
    tasks = [task for d in plan.dtypes for task in _gemm_tasks(device, d, plan, flush)]
    tasks += [task for d in plan.dtypes for task in _elementwise_tasks(device, d, plan)]
    tasks.append(("fixed costs", lambda: _fixed_costs(device, plan.budget_s)))
    total = plan.passes * len(tasks) + 1
    done = 0

    def step(what: str) -> None:
        nonlocal done
        if on_progress is not None:
            on_progress(done, total, what)
        done += 1

    with torch.inference_mode(), collector_paused():  # one collection, not one per point
        best = run_passes(tasks, plan.passes, step)
        step("copy bandwidth")
        copy = _copy_gbps(device, flush_bytes)
    gemm = {
        d: tuple(GemmPoint(m, n, k, *best[("gemm", d, m, n, k)]) for m in plan.ms for n in plan.ns for k in plan.ks) for d in plan.dtypes
    }
    elementwise: dict[str, dict[str, list[ElementwisePoint]]] = {}
    for key, (seconds, spread) in best.items():
        if key[0] == "elementwise":
            _, d, op, elements = key
            elementwise.setdefault(d, {}).setdefault(op, []).append(ElementwisePoint(elements, seconds, spread))
    op_call_s = best[("op",)][0]
    ffn_call = {name: max(0.0, best[("ffn", name)][0] - _op_calls(name) * op_call_s) for name in priced_variants(VARIANTS)}
    cuda = device.type == "cuda"
    return DeviceProfile(
        name=PROFILE_NAME,
        device=device.type,
        device_name=torch.cuda.get_device_name(device) if cuda else cpu_name(),
        threads=torch.get_num_threads(),
        torch_version=torch.__version__,
        measured_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        memory_bytes=torch.cuda.get_device_properties(device).total_memory if cuda else cpu_memory_bytes(),
        cache="cold",
        copy_gbps=copy,
        op_call_s=op_call_s,
        gemm=gemm,
        elementwise={d: {op: tuple(points) for op, points in ops.items()} for d, ops in elementwise.items()},
        ffn_call_s=ffn_call,
        seconds_taken=time.perf_counter() - started,
        passes=plan.passes,
    )


def _op_calls(variant: str) -> int:
    """The ops one call of the variant's module dispatches at width 8, one token."""
    ops = forward_ops(FFNSpec(variant=variant, d_model=8, d_ff=8), 1)
    return ops.calls if ops is not None else 0
