"""What a serving process holds on each GPU beside its tensors: the CUDA context (driver state
and the kernels it loads), cuBLAS workspaces and what the allocator keeps, and with more than
one GPU NCCL's communication buffers. The model does not decide it, so it is a measured figure
with its source, not a computed one. Pure data."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RESERVE_SOURCE", "RuntimeReserve", "runtime_reserve"]

GIB = 1 << 30
# vLLM's memory profile on an H100 80GB (Llama-3-8B): memory not allocated by PyTorch's tensors,
# "non_torch_memory", 1.79 GiB on one GPU and 3.58 GiB per GPU at tensor parallel 2 (NCCL's
# buffers added). Measured figures from one run, not bounds: another driver, CUDA or NCCL
# version differs.
_ONE_GPU = round(1.79 * GIB)
_PARALLEL = round(3.58 * GIB)
RESERVE_SOURCE = (
    "vLLM's memory profile on an H100 (non_torch_memory 1.79 GiB at tp 1, 3.58 GiB at tp 2)",
    "https://github.com/vllm-project/vllm/pull/10511",
)


@dataclass(frozen=True)
class RuntimeReserve:
    bytes_: int
    what: str  # in words, English (the renderer translates it)
    context: str = "CUDA"  # whose context and graphs: "CUDA", or "HIP" on ROCm


def runtime_reserve(gpus: int, runtime: str = "CUDA") -> RuntimeReserve:
    """Per GPU: the runtime's context and allocator alone on one GPU; with the collective
    library's buffers on more. `runtime` is the GPU's: "CUDA" (NCCL) or "ROCm" (HIP, RCCL);
    the bytes are the one figure measured (on CUDA) for both."""
    context, collectives = ("HIP", "RCCL") if runtime == "ROCm" else ("CUDA", "NCCL")
    if gpus > 1:
        return RuntimeReserve(_PARALLEL, f"{context} context, allocator, {collectives} buffers", context)
    return RuntimeReserve(_ONE_GPU, f"{context} context and allocator", context)
