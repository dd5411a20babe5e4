"""Time an FFN on CPU or CUDA, honestly, and say how it was measured → BenchReport.

Method: the first call (compilation, cuBLAS heuristics) and a warm-up by time stay out of the
numbers; each timed call is bracketed by CUDA events (on CPU, by the host clock, as CPU ops
are synchronous); the Python garbage collector is off while timing; in `cold` cache mode
inputs rotate among several buffers and a buffer twice the last-level cache is written
between calls. The median and IQR of the samples are reported, never the mean. Achieved
TFLOP/s come from the analytic matmul FLOPs (×3 with backward: dX and dW each cost one forward).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

import torch

from ffn_cli.accounting import DTYPE_BYTES, activation_elements_per_token, matmul_flops_per_token, total_params
from ffn_cli.device import preflight, resolve_device_dtype
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.modules import build_ffn
from ffn_cli.peaks import lookup_gpu, peak_dtype_key, ridge_flop_per_byte
from ffn_cli.spec import FFNSpec, check_int

__all__ = [
    "CACHE_MODES",
    "COMPILE_MODES",
    "IMPLS",
    "NOISY_REL_IQR",
    "BenchConfig",
    "BenchEnv",
    "BenchReport",
    "BenchResult",
    "Calibration",
    "CheckpointDelta",
    "Impl",
    "ProgressFn",
    "TimingStats",
    "estimate_memory_bytes",
    "impl_for",
    "min_traffic_bytes",
    "parse_impls",
    "run_bench",
    "summarize",
]

NOISY_REL_IQR = 0.10  # IQR/median above this gets a warning
CACHE_MODES = ("cold", "hot")
COMPILE_MODES = ("default", "max-autotune-no-cudagraphs", "max-autotune", "reduce-overhead")
COLD_INPUT_BUFFERS = 3
MIN_AUTO_REPEATS = 10
MAX_REPEATS = 10_000
CPU_LLC_FALLBACK_BYTES = 32 << 20
CUDA_MIN_FLUSH_BYTES = 256 << 20  # as triton.testing.do_bench

ProgressFn = Callable[[int, int, str], None]  # (cases done, cases in all, what runs next)


# --- implementations -----------------------------------------------------------------------


@dataclass(frozen=True)
class Impl:
    """One way to run the same FFN: weight layout and compilation."""

    name: str
    fused: bool
    compile_mode: str | None
    summary: str


IMPLS: dict[str, Impl] = {
    i.name: i
    for i in (
        Impl("eager", False, None, "the module as built (gated: separate gate_proj and up_proj)"),
        Impl("fused", True, None, "one gate_up_proj GEMM of 2·d_ff rows, then chunk (gated only)"),
        Impl("compile", False, "default", "torch.compile: the elementwise steps become one kernel"),
        Impl("fused-compile", True, "default", "torch.compile of the fused layout"),
        Impl("autotune", False, "max-autotune-no-cudagraphs", "torch.compile autotuning each GEMM (Triton templates vs cuBLAS)"),
        Impl("fused-autotune", True, "max-autotune-no-cudagraphs", "autotuned torch.compile of the fused layout"),
    )
}


def impl_for(*, fused: bool, compile_mode: str | None) -> Impl:
    """The implementation that `--fused` / `--compile` / `--compile-mode` name."""
    if compile_mode is not None and compile_mode not in COMPILE_MODES:
        raise FFNError("compile_mode", compile_mode, "choose one of " + ", ".join(COMPILE_MODES))
    for impl in IMPLS.values():
        if impl.fused == fused and impl.compile_mode == compile_mode:
            return impl
    name = ("fused-" if fused else "") + f"compile[{compile_mode}]"
    return Impl(name, fused, compile_mode, f"torch.compile mode={compile_mode}")


def parse_impls(text: str) -> list[Impl]:
    """'eager,fused-compile' → Impls; 'all' → every one."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return list(IMPLS.values())
    unknown = [n for n in names if n not in IMPLS]
    if not names or unknown:
        raise FFNError("impl", text, "a comma list of " + ", ".join(IMPLS) + ", or all")
    return [IMPLS[n] for n in dict.fromkeys(names)]


# --- statistics ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimingStats:
    samples_ms: tuple[float, ...]
    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float

    @property
    def n(self) -> int:
        return len(self.samples_ms)

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms

    @property
    def rel_iqr(self) -> float:
        return self.iqr_ms / self.median_ms if self.median_ms > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.rel_iqr > NOISY_REL_IQR


def summarize(samples_ms: Sequence[float]) -> TimingStats:
    """Median and quartiles (inclusive method: the quartiles of the samples themselves)."""
    data = [float(s) for s in samples_ms]
    if not data:
        raise ValueError("no samples to summarize")
    median = statistics.median(data)
    q1, _, q3 = statistics.quantiles(data, n=4, method="inclusive") if len(data) > 1 else (median, median, median)
    return TimingStats(tuple(data), median, q1, q3, min(data))


# --- configuration and results ---------------------------------------------------------------


@dataclass(frozen=True)
class BenchConfig:
    """How to measure; the same for every case of a sweep."""

    device: str = "cpu"
    backward: bool = False
    checkpoint: bool = False  # also run each case with gradient checkpointing and compare
    cache: str = "cold"
    warmup_ms: float = 300.0
    repeats: int | None = None  # fixed sample count; None: enough calls to fill min_time_ms
    min_time_ms: float = 500.0
    threads: int | None = None  # CPU: torch.set_num_threads; None keeps torch's count
    calibrate: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if self.cache not in CACHE_MODES:
            raise FFNError("cache", self.cache, "choose cold or hot")
        if self.checkpoint and not self.backward:
            raise FFNError("checkpoint", True, "checkpointing changes only the backward pass: add --backward")
        if isinstance(self.warmup_ms, bool) or not isinstance(self.warmup_ms, (int, float)) or not 0 <= self.warmup_ms <= 600_000:
            raise FFNError("warmup_ms", self.warmup_ms, "must be a number of milliseconds in [0, 600000]")
        if self.repeats is not None:
            check_int("repeats", self.repeats, maximum=MAX_REPEATS)
        if isinstance(self.min_time_ms, bool) or not isinstance(self.min_time_ms, (int, float)) or not 0 < self.min_time_ms <= 3_600_000:
            raise FFNError("min_time", self.min_time_ms, "must be a positive time of at most an hour")
        if self.threads is not None:
            check_int("threads", self.threads, maximum=1024)
        check_int("seed", self.seed, minimum=0, maximum=2**63 - 1)


@dataclass(frozen=True)
class BenchEnv:
    """What the numbers depend on besides the code: recorded with every report."""

    device: str
    device_name: str
    torch_version: str
    cuda_version: str | None
    threads: int
    tf32_matmul: bool
    float32_matmul_precision: str
    cache: str
    input_buffers: int
    flush_bytes: int
    timer: str
    sm_count: int | None
    l2_bytes: int | None
    load_avg_1m: float | None  # other work competing for the CPUs when the run started
    cpu_count: int
    python_version: str
    platform: str
    date_utc: str


@dataclass(frozen=True)
class Calibration:
    """This device's own ceilings, measured in the same run: GEMM rate and copy bandwidth."""

    dtype: str
    gemm_n: int
    gemm_tflops: float
    gemm_samples: int
    copy_bytes: int
    copy_gbps: float


@dataclass(frozen=True)
class BenchResult:
    """One timed case. Times in ms; flops per call; memory in bytes; pct_peak in percent."""

    variant: str
    impl: str
    fused: bool
    compile_mode: str | None
    checkpoint: bool
    mode: str  # "forward" or "forward+backward"
    device: str
    dtype: str
    d_model: int
    d_ff: int
    batch: int
    seq_len: int
    tokens: int
    cache: str
    samples: int
    median_ms: float
    iqr_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    rel_iqr: float
    noisy: bool
    tokens_per_s: float
    flops: int
    tflops: float
    peak_tflops: float | None
    peak_source: str | None
    pct_peak: float | None
    intensity_flop_per_byte: float
    ridge_flop_per_byte: float | None
    bound: str | None  # "compute", "memory", or None when no ceiling is known
    peak_mem_bytes: int | None
    extra_mem_bytes: int | None  # over what was allocated before the call (weights, inputs)
    mem_source: str
    est_mem_bytes: int
    first_call_s: float
    warmup_calls: int
    fastest: bool = False  # the fastest implementation of its case, when several ran
    samples_ms: tuple[float, ...] = field(default=(), repr=False)

    @property
    def label(self) -> str:
        ckpt = " ckpt" if self.checkpoint else ""
        return f"{self.variant} d{self.d_model} f{self.d_ff} T{self.tokens} {self.dtype} {self.impl}{ckpt}"


@dataclass(frozen=True)
class CheckpointDelta:
    """Gradient checkpointing against none, same case: memory it saves, time it costs."""

    label: str
    base_median_ms: float
    ckpt_median_ms: float
    time_cost_pct: float
    base_extra_mem_bytes: int | None
    ckpt_extra_mem_bytes: int | None
    mem_saved_bytes: int | None
    est_saved_bytes: int  # the activations it need not keep: all but the FFN's input


@dataclass(frozen=True)
class BenchReport:
    results: tuple[BenchResult, ...]
    env: BenchEnv
    calibrations: tuple[Calibration, ...] = ()
    checkpoint: tuple[CheckpointDelta, ...] = ()
    skipped: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


# --- accounting for a run ----------------------------------------------------------------------


def min_traffic_bytes(spec: FFNSpec, *, dtype: str, tokens: int, backward: bool) -> int:
    """Fewest bytes a pass moves through memory: weights and input read once, output written
    once; backward adds reading weights, the output gradient and the saved activations again,
    and writing the weight and input gradients. Intermediates of an unfused pass come on top."""
    b, p, d = DTYPE_BYTES[dtype], total_params(spec), spec.d_model
    forward = p + 2 * tokens * d
    if not backward:
        return forward * b
    return (forward + 2 * p + 2 * tokens * d + tokens * activation_elements_per_token(spec)) * b


def estimate_memory_bytes(spec: FFNSpec, *, dtype: str, tokens: int, backward: bool, input_buffers: int, flush_bytes: int) -> int:
    """A generous estimate of what one case allocates, for the preflight check."""
    b, p, d = DTYPE_BYTES[dtype], total_params(spec), spec.d_model
    acts = tokens * activation_elements_per_token(spec) * b
    needed = p * b + (input_buffers + 2) * tokens * d * b + flush_bytes + acts
    if backward:
        needed += p * b + input_buffers * tokens * d * b + 2 * acts  # grads, saved and transient activations
    return int(needed * 1.25)


# --- the device side ------------------------------------------------------------------------------


def _check_device(name: str) -> None:
    text = name.strip().lower()
    if text == "meta":
        raise FFNError("device", name, "bench runs real computation: use cpu, cuda or cuda:N")
    if text.startswith("cuda") and not torch.cuda.is_available():
        raise FFNRuntimeError(f"--device {name}: CUDA is not available here; use --device cpu")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _cpu_llc_bytes() -> int:
    """Size of the largest CPU cache level, from sysfs (Linux); a fallback elsewhere."""
    best = 0
    for index in range(8):
        try:
            with open(f"/sys/devices/system/cpu/cpu0/cache/index{index}/size") as f:
                text = f.read().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or CPU_LLC_FALLBACK_BYTES


def _flush_bytes(device: torch.device, cache: str) -> int:
    if cache == "hot":
        return 0
    if device.type == "cuda":
        return max(2 * torch.cuda.get_device_properties(device).L2_cache_size, CUDA_MIN_FLUSH_BYTES)
    return 2 * _cpu_llc_bytes()


def _available_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _make_env(device: torch.device, cache: str, flush_bytes: int) -> BenchEnv:
    cuda = device.type == "cuda"
    props = torch.cuda.get_device_properties(device) if cuda else None
    return BenchEnv(
        device=str(device),
        device_name=torch.cuda.get_device_name(device) if cuda else _cpu_name(),
        torch_version=torch.__version__,
        cuda_version=torch.version.cuda,
        threads=torch.get_num_threads(),
        tf32_matmul=bool(torch.backends.cuda.matmul.allow_tf32),
        float32_matmul_precision=torch.get_float32_matmul_precision(),
        cache=cache,
        input_buffers=COLD_INPUT_BUFFERS if cache == "cold" else 1,
        flush_bytes=flush_bytes,
        timer="cuda events" if cuda else "time.perf_counter_ns",
        sm_count=props.multi_processor_count if props else None,
        l2_bytes=props.L2_cache_size if props else None,
        load_avg_1m=os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        cpu_count=_available_cpus(),
        python_version=platform.python_version(),
        platform=platform.platform(),
        date_utc=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


class _PeakMemory:
    """Peak memory over a region. CUDA: max allocated, and its excess over what was allocated
    at the start. CPU: the resident set's high-water mark (reset through /proc/self/clear_refs),
    and its growth over the resident set at the start, free heap pages released first."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.base = 0
        self.peak_resettable = False

    def start(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.base = torch.cuda.memory_allocated(self.device)
            return
        _release_free_heap()
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current VmRSS (Linux ≥ 4.0)
            self.peak_resettable = True
        except OSError:
            self.peak_resettable = False
        self.base = _proc_status_kib("VmRSS") * 1024

    def stop(self) -> tuple[int | None, int | None, str]:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            peak = torch.cuda.max_memory_allocated(self.device)
            return peak, peak - self.base, "cuda max allocated"
        key, source = ("VmHWM", "rss growth") if self.peak_resettable else ("VmRSS", "rss growth (no peak reset)")
        now = _proc_status_kib(key) * 1024
        if now == 0:
            return None, None, "unavailable"
        return now, max(0, now - self.base), source


def _release_free_heap() -> None:
    """Hand freed heap pages back to the OS (glibc malloc_trim), so that memory the warm-up
    freed must be faulted in again and the timed calls' working set shows as RSS growth."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: the growth shown is a lower bound
        ctypes.CDLL(None).malloc_trim(0)


def _proc_status_kib(key: str) -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _time_calls(run: Callable[[int], None], prepare: Callable[[int], None], n: int, device: torch.device) -> list[float]:
    """n samples in ms. prepare(i) (grad reset, cache flush) runs before each call, untimed."""
    with _gc_paused():
        if device.type == "cuda":
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            torch.cuda.synchronize(device)
            for i in range(n):
                prepare(i)
                starts[i].record()
                run(i)
                ends[i].record()
            torch.cuda.synchronize(device)
            return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
        samples = []
        for i in range(n):
            prepare(i)
            t0 = time.perf_counter_ns()
            run(i)
            samples.append((time.perf_counter_ns() - t0) / 1e6)
        return samples


@dataclass(frozen=True)
class _WarmUp:
    first_call_s: float
    calls: int
    per_call_ms: float


def _warm_up(run: Callable[[int], None], prepare: Callable[[int], None], device: torch.device, warmup_ms: float) -> _WarmUp:
    """The first call alone (it compiles), then calls until warmup_ms have passed (at least one).
    Synchronised after each call, so the host clock is right; nothing here is reported as a time."""
    prepare(0)
    _sync(device)
    t0 = time.perf_counter()
    run(0)
    _sync(device)
    first_s = time.perf_counter() - t0
    calls, start = 0, time.perf_counter()
    while calls == 0 or (time.perf_counter() - start) * 1e3 < warmup_ms:
        prepare(calls + 1)
        run(calls + 1)
        _sync(device)
        calls += 1
    return _WarmUp(first_s, calls + 1, (time.perf_counter() - start) * 1e3 / calls)


def _repeats(config: BenchConfig, per_call_ms: float) -> int:
    if config.repeats is not None:
        return config.repeats
    return max(MIN_AUTO_REPEATS, min(MAX_REPEATS, math.ceil(config.min_time_ms / max(per_call_ms, 1e-6))))


def _compile(module: torch.nn.Module, mode: str) -> Callable[[torch.Tensor], torch.Tensor]:
    # A fresh Dynamo cache per case: every module of a sweep shares FFNModule.forward, and a
    # shared cache would hit its recompile limit (then silently run eager) or go dynamic.
    torch._dynamo.reset()
    return torch.compile(module, mode=mode, dynamic=False)  # type: ignore[return-value]


# --- calibration -----------------------------------------------------------------------------------


def _calibrate(device: torch.device, dtype: torch.dtype, dtype_name: str, config: BenchConfig) -> Calibration:
    """GEMM rate (n³, three operand pairs rotated) and device copy bandwidth (read + write)."""
    cuda = device.type == "cuda"
    n = 8192 if cuda else 1024
    copy_elems = (256 << 20) if cuda else (16 << 20)  # float32: 1 GiB on GPUs, 64 MiB on CPUs
    b = DTYPE_BYTES[dtype_name]
    preflight(6 * n * n * b + n * n * b + 2 * copy_elems * 4, device, f"--calibrate ({dtype_name})")
    torch.manual_seed(config.seed)
    pairs = [(torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)) for _ in range(3)]
    with torch.inference_mode():

        def mm(i: int) -> None:
            a, w = pairs[i % 3]
            torch.mm(a, w)

        gemm = _measure_calls(mm, lambda i: None, device, config)
        pairs.clear()  # free them before the copy buffers
        src = torch.randn(copy_elems, device=device, dtype=torch.float32)
        dst = torch.empty_like(src)

        def copy(i: int) -> None:
            dst.copy_(src)

        copy_stats = _measure_calls(copy, lambda i: None, device, config)
    return Calibration(
        dtype=dtype_name,
        gemm_n=n,
        gemm_tflops=2 * n**3 / (gemm.median_ms * 1e-3) / 1e12,
        gemm_samples=gemm.n,
        copy_bytes=2 * copy_elems * 4,
        copy_gbps=2 * copy_elems * 4 / (copy_stats.median_ms * 1e-3) / 1e9,
    )


def _measure_calls(run: Callable[[int], None], prepare: Callable[[int], None], device: torch.device, config: BenchConfig) -> TimingStats:
    warm = _warm_up(run, prepare, device, config.warmup_ms)
    return summarize(_time_calls(run, prepare, _repeats(config, warm.per_call_ms), device))


# --- one case ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Case:
    spec: FFNSpec
    impl: Impl
    dtype: str
    batch: int
    seq_len: int
    checkpoint: bool

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    @property
    def label(self) -> str:
        ckpt = " ckpt" if self.checkpoint else ""
        return f"{self.spec.variant} d{self.spec.d_model} f{self.spec.d_ff} T{self.tokens} {self.dtype} {self.impl.name}{ckpt}"


@dataclass
class _Run:
    """Everything shared by the cases of one sweep."""

    config: BenchConfig
    device: torch.device
    env: BenchEnv
    flush: torch.Tensor | None
    calibrations: dict[str, Calibration]


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


def _ceilings(run: _Run, dtype: str) -> tuple[float | None, float | None, str | None]:
    """(peak TFLOP/s, bandwidth GB/s, where they come from) for this device and dtype."""
    cal = run.calibrations.get(dtype)
    if cal is not None:
        return cal.gemm_tflops, cal.copy_gbps, f"measured here: {dtype} GEMM {cal.gemm_n}³ and copy"
    if run.device.type != "cuda":
        return None, None, None
    entry = lookup_gpu(run.env.device_name)
    key = peak_dtype_key(dtype, run.env.tf32_matmul)
    if entry is None or entry.tflops_for(key) is None:
        return None, None, None
    return entry.tflops_for(key), entry.bandwidth_gbps, f"{entry.name} datasheet, dense {key}"


def _bench_case(case: _Case, run: _Run) -> BenchResult:
    config, device = run.config, run.device
    spec = case.spec.with_(fused_gate_up=True) if case.impl.fused else case.spec
    _, torch_dtype = resolve_device_dtype(str(device), case.dtype)
    n_bufs = run.env.input_buffers
    est = estimate_memory_bytes(
        spec, dtype=case.dtype, tokens=case.tokens, backward=config.backward, input_buffers=n_bufs, flush_bytes=run.env.flush_bytes
    )
    preflight(est, device, f"ffn bench {case.label}")
    module = build_ffn(spec, device=device, dtype=torch_dtype, seed=config.seed)
    module.gradient_checkpointing = case.checkpoint
    module.train(config.backward)
    torch.manual_seed(config.seed + 1)
    shape = (case.batch, case.seq_len, spec.d_model)
    inputs = [torch.randn(shape, device=device, dtype=torch_dtype, requires_grad=config.backward) for _ in range(n_bufs)]
    grad_out = torch.randn(shape, device=device, dtype=torch_dtype)
    fn: Callable[[torch.Tensor], torch.Tensor] = _compile(module, case.impl.compile_mode) if case.impl.compile_mode else module

    def reset_grads() -> None:
        module.zero_grad(set_to_none=True)
        for x in inputs:
            x.grad = None

    def prepare(i: int) -> None:
        if config.backward:
            reset_grads()
        if run.flush is not None:
            run.flush.zero_()

    def call(i: int) -> None:
        y = fn(inputs[i % n_bufs])
        if config.backward:
            y.backward(grad_out)

    memory = _PeakMemory(device)
    with torch.inference_mode() if not config.backward else contextlib.nullcontext():
        try:
            warm = _warm_up(call, prepare, device, config.warmup_ms)
        except Exception as exc:
            if case.impl.compile_mode is None or type(exc).__name__ == "OutOfMemoryError":
                raise
            raise FFNRuntimeError(
                f"torch.compile (mode={case.impl.compile_mode}) failed for {case.label}: {type(exc).__name__}: {_first_line(exc)}"
            ) from None
        reset_grads()
        memory.start()
        samples = _time_calls(call, prepare, _repeats(config, warm.per_call_ms), device)
        peak_mem, extra_mem, mem_source = memory.stop()
    return _result(case, run, summarize(samples), warm, est, (peak_mem, extra_mem, mem_source))


def _result(case: _Case, run: _Run, stats: TimingStats, warm: _WarmUp, est: int, mem: tuple[int | None, int | None, str]) -> BenchResult:
    backward = run.config.backward
    spec = case.spec
    flops = matmul_flops_per_token(spec) * case.tokens * (3 if backward else 1)
    seconds = max(stats.median_ms, 1e-6) * 1e-3  # a timer tick, not zero: rates stay finite
    tflops = flops / seconds / 1e12
    peak, bandwidth, source = _ceilings(run, case.dtype)
    intensity = flops / min_traffic_bytes(spec, dtype=case.dtype, tokens=case.tokens, backward=backward)
    ridge = ridge_flop_per_byte(peak, bandwidth) if peak and bandwidth else None
    return BenchResult(
        variant=spec.variant,
        impl=case.impl.name,
        fused=case.impl.fused,
        compile_mode=case.impl.compile_mode,
        checkpoint=case.checkpoint,
        mode="forward+backward" if backward else "forward",
        device=str(run.device),
        dtype=case.dtype,
        d_model=spec.d_model,
        d_ff=spec.hidden,
        batch=case.batch,
        seq_len=case.seq_len,
        tokens=case.tokens,
        cache=run.config.cache,
        samples=stats.n,
        median_ms=stats.median_ms,
        iqr_ms=stats.iqr_ms,
        q1_ms=stats.q1_ms,
        q3_ms=stats.q3_ms,
        min_ms=stats.min_ms,
        rel_iqr=stats.rel_iqr,
        noisy=stats.noisy,
        tokens_per_s=case.tokens / seconds,
        flops=flops,
        tflops=tflops,
        peak_tflops=peak,
        peak_source=source,
        pct_peak=100 * tflops / peak if peak else None,
        intensity_flop_per_byte=intensity,
        ridge_flop_per_byte=ridge,
        bound=None if ridge is None else ("compute" if intensity >= ridge else "memory"),
        peak_mem_bytes=mem[0],
        extra_mem_bytes=mem[1],
        mem_source=mem[2],
        est_mem_bytes=est,
        first_call_s=warm.first_call_s,
        warmup_calls=warm.calls,
        samples_ms=stats.samples_ms,
    )


# --- the sweep ----------------------------------------------------------------------------------------


def _cases(
    specs: Sequence[FFNSpec], impls: Sequence[Impl], dtypes: Sequence[str], batch: int, seq_lens: Sequence[int], checkpoint: bool
) -> tuple[list[_Case], list[str]]:
    cases, skipped = [], []
    for dtype in dtypes:
        for spec in specs:
            for seq_len in seq_lens:
                for impl in impls:
                    if impl.fused and spec.ffn_variant.family != "gated":
                        skipped.append(f"{spec.variant} {impl.name}: the fused gate/up layout needs a gated variant")
                        continue
                    for ckpt in (False, True) if checkpoint else (False,):
                        cases.append(_Case(spec, impl, dtype, batch, seq_len, ckpt))
    return cases, list(dict.fromkeys(skipped))


def _mark_fastest(results: list[BenchResult]) -> list[BenchResult]:
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, r in enumerate(results):
        groups.setdefault((r.variant, r.d_model, r.d_ff, r.batch, r.seq_len, r.dtype, r.mode, r.checkpoint), []).append(i)
    out = list(results)
    for members in groups.values():
        if len({results[i].impl for i in members}) > 1:
            best = min(members, key=lambda i: results[i].median_ms)
            out[best] = replace(out[best], fastest=True)
    return out


def _checkpoint_deltas(pairs: Sequence[tuple[_Case, BenchResult]]) -> list[CheckpointDelta]:
    base = {replace(c, checkpoint=False): r for c, r in pairs if not c.checkpoint}
    deltas = []
    for case, r in pairs:
        b = base.get(replace(case, checkpoint=False)) if case.checkpoint else None
        if b is None:
            continue
        saved = None if b.extra_mem_bytes is None or r.extra_mem_bytes is None else b.extra_mem_bytes - r.extra_mem_bytes
        # Checkpointing keeps only the FFN's input; everything else autograd would keep is saved.
        kept_elements = activation_elements_per_token(case.spec) - case.spec.d_model
        deltas.append(
            CheckpointDelta(
                label=b.label,
                base_median_ms=b.median_ms,
                ckpt_median_ms=r.median_ms,
                time_cost_pct=100 * (r.median_ms / b.median_ms - 1),
                base_extra_mem_bytes=b.extra_mem_bytes,
                ckpt_extra_mem_bytes=r.extra_mem_bytes,
                mem_saved_bytes=saved,
                est_saved_bytes=case.tokens * kept_elements * DTYPE_BYTES[case.dtype],
            )
        )
    return deltas


def _warnings(results: Sequence[BenchResult], run: _Run, dtypes: Sequence[str]) -> list[str]:
    notes = []
    noisy = [r.label for r in results if r.noisy]
    if noisy:
        notes.append(
            f"IQR over {NOISY_REL_IQR:.0%} of the median (busy machine or too few calls; close other programs or raise --min-time): "
            + ", ".join(noisy)
        )
    env = run.env
    cpu = run.device.type == "cpu"
    if cpu and env.threads > env.cpu_count:
        notes.append(f"{env.threads} threads on {env.cpu_count} available CPUs: threads compete, times are not representative")
    if cpu and env.load_avg_1m is not None and env.load_avg_1m > env.cpu_count:
        notes.append(
            f"the machine is busy (load average {env.load_avg_1m:.1f} on {env.cpu_count} CPUs): CPU times include waiting for a core"
        )
    for dtype in dtypes:
        if _ceilings(run, dtype)[0] is None:
            notes.append(f"no known peak for {run.env.device_name} in {dtype}: --calibrate measures one (for % of peak and the bound)")
    return notes


def run_bench(
    *,
    specs: Sequence[FFNSpec],
    dtypes: Sequence[str] = ("float32",),
    batch: int = 1,
    seq_lens: Sequence[int] = (512,),
    impls: Sequence[Impl] = (IMPLS["eager"],),
    config: BenchConfig | None = None,
    on_progress: ProgressFn | None = None,
) -> BenchReport:
    """Time every (dtype, spec, seq_len, impl[, checkpoint]) case; one report for the sweep.

    on_progress(done, total, what) is called between cases and phases, never while timing.
    """
    config = config or BenchConfig()
    _check_device(config.device)
    check_int("batch", batch)
    for s in seq_lens:
        check_int("seq_len", s)
    device, _ = resolve_device_dtype(config.device, dtypes[0] if dtypes else "float32")
    for dtype in dtypes:
        resolve_device_dtype(config.device, dtype)
    cases, skipped = _cases(specs, impls, dtypes, batch, seq_lens, config.checkpoint)
    if not cases:
        raise FFNError("impl", ",".join(i.name for i in impls), "nothing to run: " + "; ".join(skipped))
    progress = on_progress or (lambda done, total, what: None)
    saved_threads = torch.get_num_threads()
    try:
        if device.type == "cpu":
            torch.set_num_threads(config.threads or saved_threads)
        with torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext():
            return _sweep(cases, skipped, device, config, dtypes, progress)
    finally:
        torch.set_num_threads(saved_threads)


def _sweep(
    cases: list[_Case], skipped: list[str], device: torch.device, config: BenchConfig, dtypes: Sequence[str], progress: ProgressFn
) -> BenchReport:
    flush_bytes = _flush_bytes(device, config.cache)
    env = _make_env(device, config.cache, flush_bytes)
    flush = torch.empty(flush_bytes, dtype=torch.int8, device=device) if flush_bytes else None
    run = _Run(config, device, env, flush, {})
    if config.calibrate:
        for dtype in dtypes:
            progress(0, len(cases), f"calibrating {dtype} GEMM and copy")
            run.calibrations[dtype] = _calibrate(device, resolve_device_dtype(str(device), dtype)[1], dtype, config)
    results = []
    for i, case in enumerate(cases):
        progress(i, len(cases), ("compiling and timing " if case.impl.compile_mode else "timing ") + case.label)
        results.append(_bench_case(case, run))
    progress(len(cases), len(cases), "done")
    results = _mark_fastest(results)
    return BenchReport(
        results=tuple(results),
        env=env,
        calibrations=tuple(run.calibrations.values()),
        checkpoint=tuple(_checkpoint_deltas(list(zip(cases, results, strict=True)))),
        skipped=tuple(skipped),
        warnings=tuple(_warnings(results, run, dtypes)),
    )
