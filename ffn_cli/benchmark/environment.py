"""What the numbers depend on besides the code (device, threads, TF32, load) → BenchEnv."""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Iterator
from datetime import datetime, timezone

import torch

from ffn_cli.benchmark.result import BenchEnv
from ffn_cli.benchmark.timing import input_buffers

__all__ = ["capture_env", "cpu_threads"]


@contextlib.contextmanager
def cpu_threads(device: torch.device, threads: int | None) -> Iterator[None]:
    """On CPU, run with `threads` intra-op threads (None: torch's count); restored on exit."""
    saved_threads = torch.get_num_threads()
    try:
        if device.type == "cpu":
            torch.set_num_threads(threads or saved_threads)
        yield
    finally:
        torch.set_num_threads(saved_threads)


def capture_env(device: torch.device, cache: str, flush_bytes: int) -> BenchEnv:
    """The environment as it is now; call it after the thread count is set."""
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
        input_buffers=input_buffers(cache),
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
