"""Dense peak arithmetic rates and memory bandwidths of known GPUs, and their ridge points.

Pure Python (no torch). Rates are the vendors' datasheet numbers for dense math (the
"with sparsity" figures halved), in TFLOP/s; bandwidth in GB/s (10⁹ bytes). They are
ceilings that real GEMMs do not reach (an H200 runs an 8192³ bf16 GEMM at about 790 of its
989.5 TFLOP/s), so `ffn bench --calibrate` measures this device's own GEMM peak instead.

dtype keys: float64, float32 (plain FP32 CUDA cores), tf32 (float32 matmuls with TF32
enabled), bfloat16, float16. bf16/fp16 rates are with float32 accumulation, which is what
PyTorch's GEMMs use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GPU_PEAKS", "GPUPeak", "lookup_gpu", "peak_dtype_key", "ridge_flop_per_byte"]


@dataclass(frozen=True)
class GPUPeak:
    name: str
    pattern: str  # regex searched in torch.cuda.get_device_name(), case-insensitive
    tflops: dict[str, float]
    bandwidth_gbps: float
    source: str

    def tflops_for(self, dtype_key: str) -> float | None:
        return self.tflops.get(dtype_key)


def _rates(fp64: float | None, fp32: float, tf32: float | None, bf16: float | None, fp16: float) -> dict[str, float]:
    rates = {"float64": fp64, "float32": fp32, "tf32": tf32, "bfloat16": bf16, "float16": fp16}
    return {k: v for k, v in rates.items() if v is not None}


# Most specific first: the first pattern that matches wins ("H100 PCIe" before "H100").
# fp64 is the tensor-core DGEMM rate where the chip has one (A100, H100, H200).
GPU_PEAKS: tuple[GPUPeak, ...] = (
    # NVIDIA H200 datasheet: NVL 835 TFLOP/s bf16 (1,671 with sparsity), 4.8 TB/s.
    GPUPeak("NVIDIA H200 NVL", r"H200.*NVL", _rates(60, 60, 417.5, 835.5, 835.5), 4800, "NVIDIA H200 datasheet (NVL)"),
    # NVIDIA H200 datasheet: SXM 1,979 TFLOP/s bf16 with sparsity → 989.5 dense; 4.8 TB/s HBM3e.
    GPUPeak("NVIDIA H200 SXM", r"H200", _rates(67, 67, 494.5, 989.5, 989.5), 4800, "NVIDIA H200 datasheet (SXM)"),
    # NVIDIA H100 datasheet: PCIe 1,513 bf16 sparse → 756.5 dense; 2.0 TB/s HBM2e.
    GPUPeak("NVIDIA H100 PCIe", r"H100.*PCIe", _rates(51, 51, 378, 756.5, 756.5), 2000, "NVIDIA H100 datasheet (PCIe)"),
    # NVIDIA H100 datasheet: NVL 1,671 bf16 sparse → 835.5 dense; 3.9 TB/s.
    GPUPeak("NVIDIA H100 NVL", r"H100.*NVL", _rates(60, 60, 417.5, 835.5, 835.5), 3900, "NVIDIA H100 datasheet (NVL)"),
    # NVIDIA H100 datasheet: SXM5 1,979 bf16 sparse → 989.5 dense; 3.35 TB/s HBM3 ("NVIDIA H100 80GB HBM3").
    GPUPeak("NVIDIA H100 SXM", r"H100", _rates(67, 67, 494.5, 989.5, 989.5), 3350, "NVIDIA H100 datasheet (SXM)"),
    # NVIDIA A100 datasheet: 312 bf16/fp16, 156 tf32, 19.5 fp32 and fp64 tensor core; memory per model.
    GPUPeak("NVIDIA A100 PCIe 80GB", r"A100.*PCIe.*80GB|A100 80GB PCIe", _rates(19.5, 19.5, 156, 312, 312), 1935, "NVIDIA A100 datasheet"),
    GPUPeak("NVIDIA A100 PCIe 40GB", r"A100.*PCIe", _rates(19.5, 19.5, 156, 312, 312), 1555, "NVIDIA A100 datasheet"),
    GPUPeak("NVIDIA A100 SXM4 40GB", r"A100.*40GB", _rates(19.5, 19.5, 156, 312, 312), 1555, "NVIDIA A100 datasheet"),
    GPUPeak("NVIDIA A100 SXM4 80GB", r"A100", _rates(19.5, 19.5, 156, 312, 312), 2039, "NVIDIA A100 datasheet"),
    # NVIDIA A10 datasheet: 125 bf16/fp16 (250 sparse), 62.5 tf32, 31.2 fp32; 600 GB/s GDDR6.
    GPUPeak("NVIDIA A10", r"\bA10\b", _rates(None, 31.2, 62.5, 125, 125), 600, "NVIDIA A10 datasheet"),
    # NVIDIA L40S datasheet: 362.05 bf16/fp16 (733 sparse), 183 tf32, 91.6 fp32; 864 GB/s.
    GPUPeak("NVIDIA L40S", r"\bL40S\b", _rates(None, 91.6, 183, 362.05, 362.05), 864, "NVIDIA L40S datasheet"),
    # NVIDIA L40 datasheet: 181.05 bf16/fp16 (362.1 sparse), 90.5 tf32 and fp32; 864 GB/s.
    GPUPeak("NVIDIA L40", r"\bL40\b", _rates(None, 90.5, 90.5, 181.05, 181.05), 864, "NVIDIA L40 datasheet"),
    # NVIDIA L4 datasheet: 121 bf16/fp16 (242 sparse), 60 tf32 (120 sparse), 30.3 fp32; 300 GB/s.
    GPUPeak("NVIDIA L4", r"\bL4\b", _rates(None, 30.3, 60, 121, 121), 300, "NVIDIA L4 datasheet"),
    # NVIDIA Ada Lovelace architecture whitepaper, GeForce RTX 4090: 165.2 fp16/bf16 tensor with
    # fp32 accumulate (330.3 with fp16 accumulate), 82.6 tf32 and fp32; 1,008 GB/s GDDR6X.
    GPUPeak("NVIDIA GeForce RTX 4090", r"RTX 4090", _rates(None, 82.6, 82.6, 165.2, 165.2), 1008, "NVIDIA Ada whitepaper"),
    # NVIDIA Ampere GA102 whitepaper, GeForce RTX 3090: 71 fp16/bf16 with fp32 accumulate, 35.6 tf32/fp32; 936 GB/s.
    GPUPeak("NVIDIA GeForce RTX 3090", r"RTX 3090(?! Ti)", _rates(None, 35.6, 35.6, 71, 71), 936, "NVIDIA GA102 whitepaper"),
    # NVIDIA V100 datasheet: PCIe 112 fp16 tensor, 14 fp32, 7 fp64; SXM2 125, 15.7, 7.8; 900 GB/s. No bf16.
    GPUPeak("NVIDIA V100 PCIe", r"V100.*PCIe", _rates(7, 14, None, None, 112), 900, "NVIDIA V100 datasheet (PCIe)"),
    GPUPeak("NVIDIA V100 SXM2", r"V100", _rates(7.8, 15.7, None, None, 125), 900, "NVIDIA V100 datasheet (SXM2)"),
    # NVIDIA T4 datasheet: 65 fp16 mixed precision, 8.1 fp32; 320 GB/s. No bf16.
    GPUPeak("NVIDIA T4", r"\bT4\b", _rates(None, 8.1, None, None, 65), 320, "NVIDIA T4 datasheet"),
)


def lookup_gpu(device_name: str) -> GPUPeak | None:
    """The table entry for a CUDA device name such as 'NVIDIA H100 80GB HBM3', or None."""
    for entry in GPU_PEAKS:
        if re.search(entry.pattern, device_name, flags=re.IGNORECASE):
            return entry
    return None


def peak_dtype_key(dtype: str, tf32: bool) -> str:
    """The table column a run uses: float32 matmuls count at the TF32 rate when TF32 is on."""
    return "tf32" if dtype == "float32" and tf32 else dtype


def ridge_flop_per_byte(tflops: float, bandwidth_gbps: float) -> float:
    """FLOP per byte at which compute time equals memory time: below it a run is memory-bound."""
    return tflops * 1e12 / (bandwidth_gbps * 1e9)
