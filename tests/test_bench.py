"""ffn_cli.benchmark: statistics, FLOP accounting, the timing loop and its errors.

Tiny sizes on CPU; nothing here asserts how fast anything runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from ffn_cli import benchmark as bench
from ffn_cli.accounting import matmul_flops_per_token
from ffn_cli.benchmark import BenchConfig, summarize
from ffn_cli.benchmark import calibrate as calibrate_module
from ffn_cli.benchmark import case as bench_case
from ffn_cli.benchmark import run as bench_run
from ffn_cli.benchmark.case import Case, Sweep, _result
from ffn_cli.benchmark.implementations import IMPLS, impl_for, keep_ieee_subnormals, parse_impls, subnormals_flushed
from ffn_cli.benchmark.memory import min_traffic_bytes
from ffn_cli.benchmark.result import Calibration
from ffn_cli.benchmark.run import run_bench
from ffn_cli.benchmark.timing import COLD_INPUT_BUFFERS, CUDA_MIN_FLUSH_BYTES, MIN_AUTO_REPEATS, WarmUp
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.modules import build_ffn
from ffn_cli.render import bench as render_bench_module
from ffn_cli.spec import FFNSpec

# Hot cache: no 64 MiB flush per call; one thread: no waiting for a busy second core.
FAST = {"repeats": 3, "warmup_ms": 0.0, "cache": "hot", "threads": 1}


def _spec(variant: str = "swiglu", **kw: object) -> FFNSpec:
    base: dict[str, object] = {"variant": variant, "d_model": 16, "d_ff": 24}
    if variant in ("moe", "soft_moe"):
        base.update(experts=4, top_k=2)
    base.update(kw)
    return FFNSpec(**base)  # type: ignore[arg-type]


def _run(specs: list[FFNSpec] | None = None, **kw: object) -> bench.BenchReport:
    config_keys = {"device", "backward", "checkpoint", "cache", "warmup_ms", "repeats", "min_time_ms", "threads", "calibrate", "seed"}
    config = BenchConfig(**{**FAST, **{k: v for k, v in kw.items() if k in config_keys}})  # type: ignore[arg-type]
    rest = {k: v for k, v in kw.items() if k not in config_keys}
    rest.setdefault("batch", 2)
    rest.setdefault("seq_lens", (4,))
    return run_bench(specs=specs or [_spec()], config=config, **rest)  # type: ignore[arg-type]


# --- statistics -------------------------------------------------------------------------------


def test_summarize_median_and_quartiles() -> None:
    stats = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (stats.median_ms, stats.q1_ms, stats.q3_ms, stats.min_ms, stats.n) == (3.0, 2.0, 4.0, 1.0, 5)
    assert stats.iqr_ms == 2.0 and math.isclose(stats.rel_iqr, 2 / 3) and stats.noisy


def test_summarize_even_count_and_single_sample() -> None:
    assert summarize([1.0, 2.0, 3.0, 4.0]).median_ms == 2.5
    one = summarize([7.0])
    assert one.iqr_ms == 0.0 and not one.noisy


def test_summarize_refuses_no_samples() -> None:
    with pytest.raises(ValueError):
        summarize([])


@given(st.lists(st.floats(0.001, 1e4), min_size=1, max_size=50))
def test_summary_is_ordered(samples: list[float]) -> None:
    s = summarize(samples)
    assert s.min_ms <= s.q1_ms <= s.median_ms <= s.q3_ms <= max(samples)
    assert s.noisy == (s.iqr_ms / s.median_ms > bench.NOISY_REL_IQR)


def test_noise_threshold_is_ten_percent() -> None:
    assert not summarize([10.0, 10.0, 11.0, 11.0, 11.0]).noisy  # IQR 1 of median 11: 9 %
    assert summarize([9.0, 9.0, 10.0, 11.0, 11.0]).noisy  # IQR 2 of median 10: 20 %


# --- implementations --------------------------------------------------------------------------


def test_impl_for_flags() -> None:
    assert impl_for(fused=False, compile_mode=None) is IMPLS["eager"]
    assert impl_for(fused=True, compile_mode="default") is IMPLS["fused-compile"]
    assert impl_for(fused=True, compile_mode="max-autotune-no-cudagraphs") is IMPLS["fused-autotune"]
    assert impl_for(fused=False, compile_mode="reduce-overhead").compile_mode == "reduce-overhead"
    with pytest.raises(FFNError):
        impl_for(fused=False, compile_mode="fastest")


def test_parse_impls() -> None:
    assert [i.name for i in parse_impls("fused, eager,fused")] == ["fused", "eager"]
    assert len(parse_impls("all")) == len(IMPLS)
    for bad in ("", "eager,turbo"):
        with pytest.raises(FFNError):
            parse_impls(bad)


# --- FLOP accounting --------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["relu", "swiglu", "geglu", "sparse"])
@pytest.mark.parametrize("backward", [False, True])
def test_reported_flops_match_flop_counter(variant: str, backward: bool) -> None:
    """The analytic FLOPs bench reports equal what FlopCounterMode counts on the same module."""
    spec = _spec(variant)
    report = _run([spec], backward=backward)
    (result,) = report.results
    module = build_ffn(spec)
    x = torch.randn(2, 4, spec.d_model, requires_grad=backward)
    with FlopCounterMode(display=False) as counter:
        y = module(x)
        if backward:
            y.backward(torch.randn_like(y))
    assert result.flops == counter.get_total_flops() == matmul_flops_per_token(spec) * 8 * (3 if backward else 1)


def test_rates_of_a_hand_computed_case() -> None:
    """relu, d 64, d_ff 256, 8 tokens: 4·64·256·8 = 524,288 FLOPs in a 2 ms median is
    2.62144e-4 TFLOP/s and 4,000 tokens/s; against a 1 GFLOP/s, 0.1 GB/s calibration,
    26.2144 % of peak and a ridge at 10 FLOP/byte."""
    spec = FFNSpec(variant="relu", d_model=64, d_ff=256)
    config = BenchConfig(**FAST)  # type: ignore[arg-type]
    env = _run().env
    cal = Calibration("float32", (1024, 1024, 1024), 0.001, 5, 3, 1 << 20, 0.1)
    sweep = Sweep(config, torch.device("cpu"), env, None, {"float32": cal})
    case = Case(spec, parse_impls("eager")[0], "float32", 2, 4, False)
    r = _result(case, sweep, summarize([2.0] * 5), WarmUp(0.1, 1, 2.0), 0, (None, None, "n/a"))
    assert r.flops == 524_288
    assert r.tflops == pytest.approx(2.62144e-4)
    assert r.tokens_per_s == pytest.approx(4000.0)
    assert r.pct_peak == pytest.approx(26.2144)
    assert r.ridge_flop_per_byte == pytest.approx(10.0)


def test_checkpointed_hardware_flops_add_the_recompute() -> None:
    """SwiGLU: 3 forwards of model FLOPs (6·d·d_ff per token each) plus the recomputed gate and
    up projections (4·d·d_ff): 22/6 ≈ 3.67 forwards, as nanoGPT's MFU tells model from hardware FLOPs."""
    spec = _spec("swiglu")
    report = _run([spec], backward=True, checkpoint=True)
    plain, ckpt = report.results
    per_token = 16 * 24
    assert plain.hardware_flops == plain.flops == 3 * 6 * per_token * 8
    assert ckpt.flops == 3 * 6 * per_token * 8
    assert ckpt.hardware_flops == (3 * 6 + 4) * per_token * 8


def test_fused_layout_has_the_same_flops() -> None:
    report = _run([_spec("swiglu")], impls=parse_impls("eager,fused"))
    eager, fused = report.results
    assert fused.fused and not eager.fused and eager.flops == fused.flops


def test_intensity_from_minimum_traffic() -> None:
    spec = _spec("relu", bias=False)
    tokens = 8
    fwd_bytes = min_traffic_bytes(spec, dtype="float32", tokens=tokens, backward=False)
    assert fwd_bytes == 4 * (2 * 16 * 24 + 2 * tokens * 16)
    assert min_traffic_bytes(spec, dtype="float32", tokens=tokens, backward=True) > 3 * fwd_bytes
    (result,) = _run([spec]).results
    assert result.intensity_flop_per_byte == pytest.approx(result.flops / fwd_bytes)


# --- the timing loop ----------------------------------------------------------------------------


def test_result_fields_on_cpu() -> None:
    report = _run([_spec("swiglu")], threads=1)
    (r,) = report.results
    assert r.samples == 3 == len(r.samples_ms) and r.median_ms > 0 and r.min_ms <= r.median_ms
    assert (r.variant, r.impl, r.mode, r.device, r.dtype, r.tokens, r.cache) == ("swiglu", "eager", "forward", "cpu", "float32", 8, "hot")
    assert r.pct_peak is None and r.bound is None and r.peak_source is None  # no CPU peak without --calibrate
    assert r.warmup_calls >= 2
    assert r.mem_source.startswith("rss") or r.mem_source == "unavailable"
    env = report.env
    assert env.threads == 1 and env.device == "cpu" and env.torch_version == torch.__version__
    assert env.cache == "hot" and env.input_buffers == 1 and env.flush_bytes == 0 and env.timer == "time.perf_counter_ns"
    assert any("--calibrate" in w for w in report.warnings)


def test_threads_are_restored() -> None:
    before = torch.get_num_threads()
    _run(threads=1)
    assert torch.get_num_threads() == before


def test_cold_cache_rotates_inputs_and_flushes() -> None:
    report = _run(cache="cold")
    assert report.env.input_buffers == COLD_INPUT_BUFFERS and report.env.flush_bytes > 0


def _spy_timed_calls(monkeypatch: pytest.MonkeyPatch, check: Callable[[], object]) -> list[object]:
    """Record check() just before every timed call (after its untimed prepare step)."""
    seen: list[object] = []
    real = bench_case.time_calls

    def spy(run, prepare, n, device):  # type: ignore[no-untyped-def]
        def checked(i: int) -> None:
            seen.append(check())
            run(i)

        return real(checked, prepare, n, device)

    monkeypatch.setattr(bench_case, "time_calls", spy)
    return seen


def test_forward_runs_in_inference_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy_timed_calls(monkeypatch, torch.is_inference_mode_enabled)
    _run(backward=False)
    assert seen == [True] * 3


def test_backward_calls_start_with_no_gradients(monkeypatch: pytest.MonkeyPatch) -> None:
    modules: list[torch.nn.Module] = []
    real_build = bench_case.build_ffn

    def build(*args, **kwargs):  # type: ignore[no-untyped-def]
        modules.append(real_build(*args, **kwargs))
        return modules[-1]

    monkeypatch.setattr(bench_case, "build_ffn", build)
    seen = _spy_timed_calls(monkeypatch, lambda: all(p.grad is None for p in modules[-1].parameters()))
    (r,) = _run(backward=True).results
    assert r.mode == "forward+backward" and seen == [True] * 3
    assert all(p.grad is not None for p in modules[-1].parameters())  # the last call did compute them


def test_min_time_sets_the_sample_count() -> None:
    report = _run(repeats=None, min_time_ms=1.0)
    assert report.results[0].samples >= MIN_AUTO_REPEATS


def test_a_min_time_beyond_the_call_cap_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    # --min-time 120 on a fast case used to stop at the cap silently: the run took seconds, not minutes.
    from ffn_cli.benchmark import run as bench_run
    from ffn_cli.benchmark import timing

    monkeypatch.setattr(timing, "MAX_REPEATS", 20)
    monkeypatch.setattr(bench_run, "MAX_REPEATS", 20)
    (capped,) = [w for w in _run(repeats=None, min_time_ms=3_600_000.0, cache="hot").warnings if w.startswith("--min-time")]
    assert capped.startswith("--min-time 3600 s: swiglu d16") and "stopped at the 20 timed calls" in capped
    # A min-time that MIN_AUTO_REPEATS calls fill on any machine (each call is clamped to take
    # at least a nanosecond) stays within the cap, whatever the machine's speed: no word.
    within = _run(repeats=None, min_time_ms=1e-6, cache="hot")
    assert within.results[0].samples < 20
    assert not [w for w in within.warnings if w.startswith("--min-time")]


def test_sweep_is_a_product_in_order() -> None:
    specs = [_spec("relu", d_model=8, d_ff=None), _spec("swiglu", d_model=8, d_ff=None)]
    report = _run(specs, seq_lens=(2, 3), dtypes=("float32", "float64"), impls=parse_impls("eager,fused"))
    keys = [(r.dtype, r.variant, r.seq_len, r.impl) for r in report.results]
    assert len(keys) == 2 * 2 * 3  # relu has no fused layout
    assert keys[0] == ("float32", "relu", 2, "eager") and keys[-1] == ("float64", "swiglu", 3, "fused")
    assert report.skipped and "relu fused" in report.skipped[0]
    fastest = [r for r in report.results if r.fastest]
    assert len(fastest) == 8 and len({(r.dtype, r.variant, r.seq_len) for r in fastest}) == 8  # one per case, a sole one included


@pytest.mark.parametrize("variant", ["moe", "soft_moe", "sparse", "bilinear"])
def test_every_family_runs(variant: str) -> None:
    (r,) = _run([_spec(variant)], backward=True).results
    assert r.flops == matmul_flops_per_token(_spec(variant)) * 8 * 3


def test_checkpoint_compares_with_and_without() -> None:
    report = _run([_spec("swiglu")], backward=True, checkpoint=True)
    assert [r.checkpoint for r in report.results] == [False, True]
    (delta,) = report.checkpoint
    assert delta.base_median_ms == report.results[0].median_ms and delta.ckpt_median_ms == report.results[1].median_ms
    # x is kept either way; the gate, silu(gate), up and their product are what checkpointing drops
    assert delta.est_saved_bytes == 8 * 4 * 24 * 4


def test_calibration_gives_peak_and_bound() -> None:
    report = _run(calibrate=True)
    (cal,) = report.calibrations
    assert cal.gemm_tflops > 0 and cal.copy_gbps > 0 and cal.gemm_shapes == 3
    assert cal.gemm_shape in {(1024, 1024, 1024), (1024, 512, 2048), (2048, 2048, 256)}
    (r,) = report.results
    assert r.peak_tflops == cal.gemm_tflops and r.pct_peak is not None and r.pct_peak > 0
    assert r.bound in ("compute", "memory") and "measured here" in (r.peak_source or "")


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "option"),
    [
        ({"cache": "warm"}, "cache"),
        ({"checkpoint": True}, "checkpoint"),
        ({"warmup_ms": -1.0}, "warmup_ms"),
        ({"repeats": 0}, "repeats"),
        ({"min_time_ms": 0.0}, "min_time"),
        ({"threads": 0}, "threads"),
    ],
)
def test_config_validation(kw: dict[str, object], option: str) -> None:
    with pytest.raises(FFNError) as info:
        BenchConfig(**kw)  # type: ignore[arg-type]
    assert info.value.option == option


def test_meta_device_is_refused() -> None:
    with pytest.raises(FFNError, match="device"):
        _run(device="meta")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_without_cuda_suggests_cpu() -> None:
    with pytest.raises(FFNRuntimeError, match="--device cpu"):
        _run(device="cuda")


def test_only_fused_on_a_dense_variant_is_refused() -> None:
    with pytest.raises(FFNError, match="gated"):
        _run([_spec("relu")], impls=parse_impls("fused"))


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(FFNError):
        _run(batch=0)
    with pytest.raises(FFNError):
        _run(seq_lens=(0,))


def test_compile_failure_is_one_runtime_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(module, mode):  # type: ignore[no-untyped-def]
        def fn(x):  # type: ignore[no-untyped-def]
            raise RuntimeError("inductor exploded\nlong traceback text")

        return fn

    monkeypatch.setattr(bench_case, "compile_module", broken)
    with pytest.raises(FFNRuntimeError) as info:
        _run(impls=parse_impls("compile"))
    message = str(info.value)
    assert "torch.compile" in message and "inductor exploded" in message and "\n" not in message


def test_preflight_refuses_what_cannot_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ffn_cli.device.available_memory_bytes", lambda device: 1024)
    with pytest.raises(FFNRuntimeError, match="needs about"):
        _run()


@pytest.mark.slow
def test_real_compile_on_cpu() -> None:
    (r,) = _run(impls=parse_impls("fused-compile"), backward=True).results
    assert r.compile_mode == "default" and r.first_call_s > 0
    assert not subnormals_flushed()


def test_flush_to_zero_from_compiled_kernels_is_undone() -> None:
    assert not subnormals_flushed()
    with keep_ieee_subnormals():
        if not torch.set_flush_denormal(True):  # what loading a kernel library linked with -ffast-math does
            pytest.skip("this CPU has no flush-to-zero mode for torch to set")
        assert subnormals_flushed()
    assert not subnormals_flushed()


# --- CUDA ---------------------------------------------------------------------------------------


@pytest.mark.cuda
def test_cuda_run_records_events_memory_and_peak() -> None:
    report = _run([_spec("swiglu", d_model=256, d_ff=512)], device="cuda", dtypes=("float16",), backward=True)
    (r,) = report.results
    assert report.env.timer == "cuda events" and report.env.sm_count and report.env.l2_bytes
    assert r.mem_source == "cuda max allocated" and r.peak_mem_bytes and r.extra_mem_bytes is not None
    assert report.env.flush_bytes >= CUDA_MIN_FLUSH_BYTES


def test_calibration_shapes_share_one_flop_count() -> None:
    """2·m·k·n is 2·n³ for each, so the best is the fastest, not the biggest."""
    assert [m * k * n for m, k, n in calibrate_module.calibration_shapes(1024)] == [1024**3] * 3


def test_the_calibrated_peak_is_the_best_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    rates = {(1024, 1024, 1024): 0.02, (1024, 512, 2048): 0.05, (2048, 2048, 256): 0.03}
    monkeypatch.setattr(calibrate_module, "_gemm_best", lambda device, dtype, shape, config: (rates[shape], 4))
    cal = calibrate_module.calibrate(torch.device("cpu"), torch.float32, "float32", BenchConfig(**FAST))
    assert (cal.gemm_tflops, cal.gemm_shape, cal.gemm_samples) == (0.05, (1024, 512, 2048), 12)


def test_a_case_faster_than_its_peak_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """A peak below what a case achieved is no upper bound: no "% of peak" over 100, a note instead."""

    def low(device: torch.device, dtype: torch.dtype, name: str, config: BenchConfig) -> Calibration:
        return Calibration(name, (8, 8, 8), 1e-9, 1, 1, 1, 1e-9)

    monkeypatch.setattr(bench_run, "calibrate", low)
    report = _run(calibrate=True)
    (r,) = report.results
    assert r.tflops > r.peak_tflops and r.above_peak and r.pct_peak is None
    assert any("no upper bound" in w and r.label in w for w in report.warnings)
    assert render_bench_module._pct(r) == "> peak"


@pytest.mark.cuda
def test_cuda_calibration() -> None:
    (cal,) = _run(device="cuda", calibrate=True, dtypes=("float16",)).calibrations
    assert cal.gemm_shape[0] * cal.gemm_shape[1] * cal.gemm_shape[2] == 8192**3 and cal.gemm_tflops > 0 and cal.copy_gbps > 0


@pytest.mark.cuda
def test_cuda_compile() -> None:
    (r,) = _run([_spec("swiglu", d_model=128, d_ff=256)], device="cuda", dtypes=("float16",), impls=parse_impls("fused-compile")).results
    assert r.compile_mode == "default"


def test_a_noisy_case_names_the_option_the_run_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    # With --repeats the advice said "raise --min-time", which beside --repeats is refused.
    from ffn_cli.benchmark import stats

    monkeypatch.setattr(stats, "NOISY_REL_IQR", -1.0)  # every case noisy, whatever the machine
    (by_count,) = [w for w in _run(repeats=3, cache="hot").warnings if w.startswith("IQR over")]
    assert "raise --repeats)" in by_count and "--min-time" not in by_count
    (by_time,) = [w for w in _run(repeats=None, min_time_ms=1e-6, cache="hot").warnings if w.startswith("IQR over")]
    assert "raise --min-time)" in by_time
