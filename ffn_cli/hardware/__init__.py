"""Hardware: the GPU table (dense peaks per dtype, bandwidth, memory, each with its source),
this machine's CPU as measured, weight storage formats, measured profiles and their forecasts. Pure Python: it
imports nothing else of ffn's and never torch."""

from ffn_cli.hardware.gpus import DTYPES, GPU, GPUS, SOURCES, gpu_for_device_name, ridge_flop_per_byte
from ffn_cli.hardware.lookup import UnknownGPU, closest, find_gpu, gpu_keys

__all__ = [
    "DTYPES",
    "GPU",
    "GPUS",
    "SOURCES",
    "UnknownGPU",
    "closest",
    "find_gpu",
    "gpu_for_device_name",
    "gpu_keys",
    "ridge_flop_per_byte",
]
