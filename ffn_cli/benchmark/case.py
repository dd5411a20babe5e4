"""One case of a sweep (spec × impl × dtype × size): build it, warm it up, time it → BenchResult.

Achieved TFLOP/s come from the analytic matmul FLOPs (×3 with backward: dX and dW each cost one
forward); % of peak and the bound from this device's ceilings, calibrated or from a datasheet.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

from ffn_cli.accounting import matmul_flops_per_token
from ffn_cli.benchmark.config import BenchConfig
from ffn_cli.benchmark.forecast import predicted_ms, profile_for
from ffn_cli.benchmark.implementations import Impl, compile_module, keep_ieee_subnormals
from ffn_cli.benchmark.memory import PeakMemory, estimate_memory_bytes, min_traffic_bytes
from ffn_cli.benchmark.result import BenchEnv, BenchResult, Calibration, case_label, settings_text
from ffn_cli.benchmark.stats import TimingStats, summarize
from ffn_cli.benchmark.timing import WarmUp, repeats_for, time_calls, warm_up
from ffn_cli.costs.roofline.bound import Roofline
from ffn_cli.device import preflight, resolve_device_dtype
from ffn_cli.errors import FFNRuntimeError, exception_line
from ffn_cli.hardware import find_gpu, gpu_for_device_name, ridge_flop_per_byte
from ffn_cli.hardware.dtypes import TABLE_DTYPE, peak_dtype_key
from ffn_cli.i18n import N_, Message, _
from ffn_cli.modules import build_ffn
from ffn_cli.seeds import Stream, stream_seed
from ffn_cli.spec import FFNSpec

__all__ = ["Case", "Sweep", "bench_case", "ceilings", "measured_ceilings", "preflight_case"]


@dataclass(frozen=True)
class Case:
    """One cell of the sweep. The spec is as given: the fused layout is applied when it runs."""

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
        s = self.spec
        return case_label(s.variant, s.d_model, s.hidden, self.tokens, self.dtype, self.impl.name, self.checkpoint)


@dataclass
class Sweep:
    """Everything shared by the cases of one sweep."""

    config: BenchConfig
    device: torch.device
    env: BenchEnv
    flush: torch.Tensor | None
    calibrations: dict[str, Calibration]


def measured_ceilings(sweep: Sweep, dtype: str) -> tuple[float, float, Message] | None:
    """(peak TFLOP/s, bandwidth GB/s, where they come from) as measured on this device: by
    --calibrate, else by `ffn hardware --measure`; None where neither measured this dtype."""
    cal = sweep.calibrations.get(dtype)
    if cal is not None:
        m, k, n = cal.gemm_shape
        measured = Message(N_("measured here: the best {dtype} GEMM ({shape}) and copy"), dtype=dtype, shape=f"{m}×{k}·{k}×{n}")
        return cal.gemm_tflops, cal.copy_gbps, measured
    profile = profile_for(sweep.device.type, sweep.config.gpu)
    peak = profile.peak_tflops(TABLE_DTYPE.get(dtype, dtype)) if profile is not None else None
    if profile is None or peak is None:
        return None
    measured = Message(N_("measured by ffn hardware --measure: the best {dtype} GEMM of its grid and copy"), dtype=dtype)
    return peak, profile.copy_gbps, measured


def ceilings(sweep: Sweep, dtype: str) -> tuple[float | None, float | None, str | None]:
    """(peak TFLOP/s, bandwidth GB/s, where they come from) for this device and dtype."""
    measured = measured_ceilings(sweep, dtype)
    if measured is not None:
        return measured
    named = sweep.config.gpu
    if sweep.device.type != "cuda" and named is None:
        return None, None, None
    entry = find_gpu(named) if named is not None else gpu_for_device_name(sweep.env.device_name)
    key = peak_dtype_key(dtype, sweep.env.tf32_matmul)
    if entry is None or entry.tflops_for(key) is None:
        return None, None, None
    datasheet = Message(N_("{gpu} datasheet, dense {dtype}"), gpu=entry.name, dtype=key)
    return entry.tflops_for(key), entry.bandwidth_gbps, Message.join(datasheet, f" (--gpu {named})" if named else "")


def _layout(case: Case) -> FFNSpec:
    return case.spec.with_(fused_gate_up=True) if case.impl.fused else case.spec


def preflight_case(case: Case, sweep: Sweep) -> int:
    """The case's estimated memory, refused (FFNRuntimeError) if it will not fit on the device now."""
    est = estimate_memory_bytes(
        _layout(case),
        dtype=case.dtype,
        tokens=case.tokens,
        backward=sweep.config.backward,
        input_buffers=sweep.env.input_buffers,
        flush_bytes=sweep.env.flush_bytes,
    )
    preflight(est, sweep.device, f"ffn bench {case.label}", meta_hint=False)
    return est


def bench_case(case: Case, sweep: Sweep) -> BenchResult:
    """Build the module and inputs, warm up (compiling, when asked), then time with memory tracked."""
    config, device = sweep.config, sweep.device
    spec = _layout(case)
    _device, torch_dtype = resolve_device_dtype(str(device), case.dtype)
    n_bufs = sweep.env.input_buffers
    est = preflight_case(case, sweep)
    module = build_ffn(spec, device=device, dtype=torch_dtype, seed=config.seed)
    module.gradient_checkpointing = case.checkpoint
    module.train(config.backward)
    shape = (case.batch, case.seq_len, spec.d_model)
    input_stream = torch.Generator(device=device).manual_seed(stream_seed(config.seed, Stream.INPUT))
    grad_stream = torch.Generator(device=device).manual_seed(stream_seed(config.seed, Stream.OUTPUT_GRAD))
    inputs = [
        torch.randn(shape, generator=input_stream, device=device, dtype=torch_dtype, requires_grad=config.backward) for _ in range(n_bufs)
    ]
    grad_out = torch.randn(shape, generator=grad_stream, device=device, dtype=torch_dtype)
    fn: Callable[[torch.Tensor], torch.Tensor] = compile_module(module, case.impl.compile_mode) if case.impl.compile_mode else module

    def reset_grads() -> None:
        module.zero_grad(set_to_none=True)
        for x in inputs:
            x.grad = None

    def prepare(i: int) -> None:
        if config.backward:
            reset_grads()
        if sweep.flush is not None:
            sweep.flush.zero_()

    def call(i: int) -> None:
        y = fn(inputs[i % n_bufs])
        if config.backward:
            y.backward(grad_out)

    memory = PeakMemory(device)
    with torch.inference_mode() if not config.backward else contextlib.nullcontext():
        try:
            with keep_ieee_subnormals():  # the first call compiles and loads kernels
                warm = warm_up(call, prepare, device, config.warmup_ms)
        except Exception as exc:  # torch.compile's failures (dynamo's, inductor's, a backend's) share no public base
            if case.impl.compile_mode is None or type(exc).__name__ == "OutOfMemoryError":
                raise
            raise FFNRuntimeError(
                _("torch.compile (mode={compile_mode}) failed for {label}: {error}").format(
                    compile_mode=case.impl.compile_mode, label=case.label, error=exception_line(exc)
                )
            ) from exc
        reset_grads()
        memory.start()
        samples = time_calls(call, prepare, repeats_for(config, warm.per_call_ms), device)
        mem = memory.stop()
    return _result(case, sweep, summarize(samples), warm, est, mem)


def hardware_flops(spec: FFNSpec, tokens: int, *, recompute: bool) -> int | None:
    """Matmul FLOPs the device runs for forward + backward with gradient checkpointing: the
    model's 3× forward plus the part of the forward backward recomputes (torch stops the
    recompute once it has every saved tensor back, so a dense FFN's down_proj is not redone).
    Counted by FlopCounterMode on a meta copy: no memory, no values (MoE: balanced routing).
    None without a recompute: the model FLOPs are the hardware FLOPs."""
    if not recompute:
        return None
    module = build_ffn(spec, device="meta")
    module.gradient_checkpointing = True
    x = torch.empty(tokens, spec.d_model, device="meta", requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        y = module(x)
        y.backward(torch.empty_like(y))
    return int(counter.get_total_flops())


def _result(case: Case, sweep: Sweep, stats: TimingStats, warm: WarmUp, est: int, mem: tuple[int | None, int | None, str]) -> BenchResult:
    backward = sweep.config.backward
    spec = case.spec
    flops = matmul_flops_per_token(spec) * case.tokens * (3 if backward else 1)
    hardware = hardware_flops(spec, case.tokens, recompute=backward and case.checkpoint) or flops
    seconds = max(stats.median_ms, 1e-6) * 1e-3  # a timer tick, not zero: rates stay finite
    tflops = flops / seconds / 1e12
    peak, bandwidth, source = ceilings(sweep, case.dtype)
    traffic = min_traffic_bytes(spec, dtype=case.dtype, tokens=case.tokens, backward=backward)
    intensity = flops / traffic
    ridge = ridge_flop_per_byte(peak, bandwidth) if peak and bandwidth else None
    # The roofline's lower bound for the same case: the least traffic and the model FLOPs at the ceilings.
    bound_ms = Roofline(flops, traffic, peak, bandwidth).time_s * 1e3 if peak and bandwidth else None
    return BenchResult(
        variant=spec.variant,
        settings=settings_text(spec, backward=backward),
        spec=spec.as_dict(),
        impl=case.impl.name,
        fused=case.impl.fused,
        compile_mode=case.impl.compile_mode,
        checkpoint=case.checkpoint,
        mode="forward+backward" if backward else "forward",
        device=str(sweep.device),
        dtype=case.dtype,
        d_model=spec.d_model,
        d_ff=spec.hidden,
        batch=case.batch,
        seq_len=case.seq_len,
        tokens=case.tokens,
        cache=sweep.config.cache,
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
        hardware_flops=hardware,
        hardware_tflops=hardware / seconds / 1e12,
        peak_tflops=peak,
        peak_source=source,
        pct_peak=100 * tflops / peak if peak and tflops <= peak else None,
        above_peak=bool(peak and tflops > peak),
        intensity_flop_per_byte=intensity,
        ridge_flop_per_byte=ridge,
        bound_ms=bound_ms,
        pct_of_bound=100 * bound_ms / stats.median_ms if bound_ms and stats.median_ms > 0 else None,
        predicted_ms=predicted_ms(
            profile_for(sweep.device.type, sweep.config.gpu), _layout(case), case.tokens, case.dtype, backward=backward
        ),
        bound=None if ridge is None else ("compute" if intensity >= ridge else "memory"),
        peak_mem_bytes=mem[0],
        extra_mem_bytes=mem[1],
        mem_source=mem[2],
        est_mem_bytes=est,
        first_call_s=warm.first_call_s,
        warmup_calls=warm.calls,
        samples_ms=stats.samples_ms,
    )
