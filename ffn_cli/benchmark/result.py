"""What a run returns: one BenchResult per case and, around them, the BenchReport of the sweep.

Plain frozen dataclasses: the renderer reads the same fields for the table and for JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ffn_cli.i18n import N_

if TYPE_CHECKING:
    from ffn_cli.spec import FFNSpec

__all__ = ["BenchEnv", "BenchReport", "BenchResult", "Calibration", "CheckpointDelta", "case_label", "settings_text"]


def case_label(variant: str, d_model: int, d_ff: int, tokens: int, dtype: str, impl: str, checkpoint: bool) -> str:
    """One case in one line, as progress, errors, warnings and checkpoint rows name it."""
    ckpt = " ckpt" if checkpoint else ""
    return f"{variant} d{d_model} f{d_ff} T{tokens} {dtype} {impl}{ckpt}"


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
    """This device's own ceilings, measured in the same run: the best GEMM call over
    `gemm_shapes` shapes (`gemm_shape` = (m, k, n) of the best) and the best copy."""

    dtype: str
    gemm_shape: tuple[int, int, int]
    gemm_tflops: float
    gemm_samples: int
    gemm_shapes: int
    copy_bytes: int
    copy_gbps: float


def settings_text(spec: FFNSpec, *, backward: bool) -> str:
    """The module's settings beyond its sizes, as the trace header words them: biases, the
    variant's own options (experts, top-k, shared, capacity), and dropout where it acts."""
    parts = [N_("bias") if spec.bias else N_("no bias"), *spec.info.header_parts(spec)]
    if spec.dropout and backward:  # the module trains (and drops) only when the backward is timed
        parts.append(f"dropout {spec.dropout:g}")
    return " · ".join(parts)


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
    flops: int  # model FLOPs: 3× forward with backward, as MFU counts them (checkpointing's recompute excluded)
    tflops: float
    hardware_flops: int  # what the device ran: model FLOPs plus checkpointing's recompute
    hardware_tflops: float
    peak_tflops: float | None
    peak_source: str | None
    pct_peak: float | None  # None when no peak is known, or when this case ran above it (above_peak)
    intensity_flop_per_byte: float
    ridge_flop_per_byte: float | None
    bound: str | None  # "compute", "memory", or None when no ceiling is known
    peak_mem_bytes: int | None
    extra_mem_bytes: int | None  # over what was allocated before the call (weights, inputs)
    mem_source: str
    est_mem_bytes: int
    first_call_s: float
    warmup_calls: int
    fastest: bool = False  # the fastest implementation of its case (its only one, when one ran)
    samples_ms: tuple[float, ...] = field(default=(), repr=False)
    settings: str = ""  # what else shapes the module: biases, experts, routing (settings_text)
    spec: dict[str, Any] = field(default_factory=dict, repr=False)  # the FFNSpec timed, as FFNSpec.as_dict()
    above_peak: bool = False  # faster than the peak it is measured against: that peak is no upper bound here
    bound_ms: float | None = None  # the roofline's lower bound, max(FLOPs / peak, least traffic / bandwidth)
    pct_of_bound: float | None = None  # bound / measured: how close the run came to it
    predicted_ms: float | None = None  # the forecast from the profile `this` (ffn hardware --measure), before the run

    @property
    def prediction_error_pct(self) -> float | None:
        """(predicted − measured) / measured, in percent."""
        if self.predicted_ms is None or self.median_ms <= 0:
            return None
        return 100 * (self.predicted_ms - self.median_ms) / self.median_ms

    @property
    def label(self) -> str:
        return case_label(self.variant, self.d_model, self.d_ff, self.tokens, self.dtype, self.impl, self.checkpoint)


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
    model_flops: int = 0  # per call, 3× forward
    hardware_flops: int = 0  # per call, with the recompute
    model_forwards: float = 3.0  # model FLOPs in forwards
    hardware_forwards: float = 0.0  # hardware FLOPs in forwards (≈ 3.67 for SwiGLU)


@dataclass(frozen=True)
class BenchReport:
    """Everything one `ffn bench` run measured, in the order it ran."""

    results: tuple[BenchResult, ...]
    env: BenchEnv
    calibrations: tuple[Calibration, ...] = ()
    checkpoint: tuple[CheckpointDelta, ...] = ()
    skipped: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
