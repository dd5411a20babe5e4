"""This machine's CPU as a row beside the GPU table: its name and memory read from the OS,
its rates as measured (`ffn bench --calibrate`'s GEMM and copy, run by the caller), never
from a datasheet."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

__all__ = ["MeasuredCPU", "cpu_memory_bytes", "cpu_name"]


def cpu_name() -> str:
    """The processor's model name (Linux's /proc/cpuinfo), else what platform reports."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "this CPU"


def cpu_memory_bytes() -> int | None:
    """Physical memory of this machine, where the OS says (POSIX sysconf)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


@dataclass(frozen=True)
class MeasuredCPU:
    """This CPU's measured ceilings: a GEMM rate for one dtype and the copy bandwidth."""

    name: str
    threads: int
    memory_bytes: int | None
    dtype: str  # the dtype the GEMM ran in (fp32, bf16, …)
    gemm_n: int
    gemm_tflops: float
    copy_gbps: float

    @property
    def ridge_flop_per_byte(self) -> float:
        return self.gemm_tflops * 1e12 / (self.copy_gbps * 1e9)
