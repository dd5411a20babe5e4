"""`ffn hardware --measure`: time this device → DeviceProfile (the torch side of the profile).

GEMMs: `F.linear` over a grid of (M, N, K), each call after a flush of the last-level cache
(cold, as `ffn bench` times by default), median of several calls. Elementwise ops: each
activation of the registry as its torch form runs it, the gate multiply and a bias add, over a
grid of sizes, on warm data (an FFN's elementwise pass reads what its GEMM just wrote). Copy:
the best call over a buffer far larger than the cache. Fixed costs: one op on a one-element
tensor, and one call of each priced variant's module at a tiny width less its ops' dispatch.
Progress is reported between measurements, never during one.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ffn_cli.bench.timing import cache_flush_bytes, time_calls
from ffn_cli.hardware.cpu import cpu_memory_bytes, cpu_name
from ffn_cli.hardware.profile import PROFILE_NAME, DeviceProfile, ElementwisePoint, GemmPoint
from ffn_cli.models.forward_ops import forward_ops, priced_variants
from ffn_cli.modules import build_ffn
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import ACTIVATIONS, VARIANTS

__all__ = ["MeasurePlan", "measure_device", "plan_for"]

ProgressFn = Callable[[int, int, str], None]
_TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class MeasurePlan:
    dtypes: tuple[str, ...]
    ms: tuple[int, ...]
    ns: tuple[int, ...]
    ks: tuple[int, ...]
    sizes: tuple[int, ...]  # elementwise outputs
    budget_s: float  # timed calls per point fill about this long (at least MIN_CALLS)

    @property
    def gemm_points(self) -> int:
        return len(self.dtypes) * len(self.ms) * len(self.ns) * len(self.ks)


MIN_CALLS, MAX_CALLS = 3, 200


def plan_for(device: torch.device, *, quick: bool) -> MeasurePlan:
    """The grid: M from one token (decode) to prefill-sized, N and K from narrow to wide."""
    if device.type == "cuda":
        dtypes = ("bf16",) if quick else ("fp32", "bf16", "fp16")
        ms = (1, 16, 256, 4096) if quick else (1, 8, 64, 512, 4096, 16384)
        ns = ks = (1024, 8192) if quick else (1024, 4096, 16384)
        sizes = (1 << 12, 1 << 18, 1 << 24) if quick else (1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26)
        return MeasurePlan(dtypes, ms, ns, ks, sizes, 0.02 if quick else 0.05)
    if quick:
        return MeasurePlan(("fp32",), (1, 16, 256), (256, 2048), (256, 2048), (1 << 10, 1 << 16, 1 << 22), 0.02)
    return MeasurePlan(
        ("fp32",),  # bf16 GEMMs crawl on most CPUs: over a minute alone
        (1, 4, 16, 64, 256, 1024),
        (256, 1024, 4096),
        (256, 1024, 4096),
        (1 << 8, 1 << 12, 1 << 16, 1 << 20, 1 << 23),
        0.05,
    )


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_s(run: Callable[[int], None], prepare: Callable[[int], None], device: torch.device, budget_s: float) -> float:
    """One untimed call (it warms and sizes the rest), then the median of enough timed calls."""
    prepare(0)
    _sync(device)
    t0 = time.perf_counter()
    run(0)
    _sync(device)
    first = time.perf_counter() - t0
    n = max(MIN_CALLS, min(MAX_CALLS, int(budget_s / max(first, 1e-7))))
    samples = sorted(time_calls(run, prepare, n, device))
    return samples[len(samples) // 2] * 1e-3


def _gemm_grid(
    device: torch.device, dtype: str, plan: MeasurePlan, flush: torch.Tensor | None, step: Callable[[str], None]
) -> list[GemmPoint]:
    points = []
    gen = torch.Generator(device=device).manual_seed(0)
    td = _TORCH_DTYPES[dtype]
    for m in plan.ms:
        for n in plan.ns:
            for k in plan.ks:
                step(f"GEMM {dtype} {m}×{n}×{k}")
                x = torch.randn(m, k, generator=gen, device=device, dtype=td)
                w = torch.randn(n, k, generator=gen, device=device, dtype=td)
                seconds = _median_s(
                    lambda i, x=x, w=w: F.linear(x, w), lambda i: flush.zero_() if flush is not None else None, device, plan.budget_s
                )
                points.append(GemmPoint(m, n, k, seconds))
    return points


def _elementwise_ops() -> dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]]:
    """Each op as an FFN runs it: the activations through the registry's own torch forms."""
    ops: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]] = {
        name: (lambda a, b, bias, act=act: act.torch(a)) for name, act in ACTIVATIONS.items() if act.runs_an_op
    }
    ops["mul"] = lambda a, b, bias: a * b
    ops["add"] = lambda a, b, bias: a + bias  # a bias over rows
    return ops


def _elementwise_grid(
    device: torch.device, dtype: str, plan: MeasurePlan, step: Callable[[str], None]
) -> dict[str, tuple[ElementwisePoint, ...]]:
    td = _TORCH_DTYPES[dtype]
    out: dict[str, list[ElementwisePoint]] = {}
    for size in plan.sizes:
        cols = min(size, 1024)
        a = torch.randn(size // cols, cols, device=device, dtype=td)
        b, bias = torch.randn_like(a), torch.randn(cols, device=device, dtype=td)
        step(f"elementwise {dtype} {size:,}")
        for name, op in _elementwise_ops().items():
            seconds = _median_s(lambda i, op=op, a=a, b=b, bias=bias: op(a, b, bias), lambda i: None, device, plan.budget_s / 4)
            out.setdefault(name, []).append(ElementwisePoint(a.numel(), seconds))
    return {k: tuple(v) for k, v in out.items()}


def _copy_gbps(device: torch.device, flush_bytes: int) -> float:
    elems = max(4 * flush_bytes, 64 << 20) // 4
    src = torch.randn(elems, device=device)
    dst = torch.empty_like(src)
    samples = time_calls(lambda i: dst.copy_(src), lambda i: None, 10, device)
    return 2 * elems * 4 / (min(samples) * 1e-3) / 1e9


def _ffn_call_s(device: torch.device, op_call_s: float, budget_s: float) -> dict[str, float]:
    """Per priced variant: one forward at width 8, one token, less the dispatch of its ops."""
    out = {}
    for name in priced_variants(VARIANTS):
        spec = FFNSpec(variant=name, d_model=8, d_ff=8)
        module = build_ffn(spec, device=device, dtype=torch.float32, seed=0).eval()
        x = torch.randn(1, 8, device=device)
        seconds = _median_s(lambda i, module=module, x=x: module(x), lambda i: None, device, budget_s)
        ops = forward_ops(spec, 1)
        calls = ops.calls if ops is not None else 0
        out[name] = max(0.0, seconds - calls * op_call_s)
    return out


def measure_device(
    device: torch.device, *, quick: bool, on_progress: ProgressFn | None = None, plan: MeasurePlan | None = None
) -> DeviceProfile:
    """Measure everything a profile holds on `device` (threads as torch has them now); `plan`
    replaces the grid plan_for chooses."""
    started = time.perf_counter()
    plan = plan or plan_for(device, quick=quick)
    flush_bytes = cache_flush_bytes(device, "cold")
    flush = torch.empty(flush_bytes // 4, device=device) if flush_bytes else None
    total = plan.gemm_points + len(plan.dtypes) * len(plan.sizes) + 2
    done = 0

    def step(what: str) -> None:
        nonlocal done
        if on_progress is not None:
            on_progress(done, total, what)
        done += 1

    with torch.inference_mode():
        gemm = {d: tuple(_gemm_grid(device, d, plan, flush, step)) for d in plan.dtypes}
        elementwise = {d: _elementwise_grid(device, d, plan, step) for d in plan.dtypes}
        step("copy bandwidth")
        copy = _copy_gbps(device, flush_bytes)
        step("fixed costs")
        one = torch.ones(1, device=device)
        op_call_s = _median_s(lambda i: torch.mul(one, one), lambda i: None, device, plan.budget_s)
        ffn_call = _ffn_call_s(device, op_call_s, plan.budget_s)
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
        elementwise=elementwise,
        ffn_call_s=ffn_call,
        seconds_taken=time.perf_counter() - started,
    )
