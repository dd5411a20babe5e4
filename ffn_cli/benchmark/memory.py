"""Memory of a case: what it allocates and moves by the spec (analytic), and what it peaked at (measured).

The estimate sizes the preflight check; the minimum traffic gives the arithmetic intensity;
PeakMemory reads CUDA's allocator or, on CPU, the resident set.
"""

from __future__ import annotations

import contextlib
import ctypes

import torch

from ffn_cli.accounting import DTYPE_BYTES, activation_bytes, param_tensors, total_params
from ffn_cli.spec import FFNSpec

__all__ = ["PeakMemory", "estimate_memory_bytes", "min_traffic_bytes"]


# --- by the spec ----------------------------------------------------------------------------------


def min_traffic_bytes(spec: FFNSpec, *, dtype: str, tokens: int, backward: bool) -> int:
    """Fewest bytes a pass moves through memory: weights and input read once, output written
    once; backward adds reading weights, the output gradient and the saved activations again,
    and writing the weight and input gradients. Intermediates of an unfused pass come on top."""
    b, p, d = DTYPE_BYTES[dtype], total_params(spec), spec.d_model
    forward = p + 2 * tokens * d
    if not backward:
        return forward * b
    return (forward + 2 * p + 2 * tokens * d) * b + activation_bytes(spec, tokens, dtype)


def estimate_memory_bytes(spec: FFNSpec, *, dtype: str, tokens: int, backward: bool, input_buffers: int, flush_bytes: int) -> int:
    """A generous estimate of what one case allocates, for the preflight check."""
    b, p, d = DTYPE_BYTES[dtype], total_params(spec), spec.d_model
    acts = activation_bytes(spec, tokens, dtype)
    needed = p * b + (input_buffers + 2) * tokens * d * b + flush_bytes + acts
    if dtype != "float32":
        needed += 4 * max(t.count for t in param_tensors(spec))  # the float32 scratch weights are drawn in
    if backward:
        needed += p * b + input_buffers * tokens * d * b + 2 * acts  # grads, saved and transient activations
    return int(needed * 1.25)


# --- measured -------------------------------------------------------------------------------------


class PeakMemory:
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
        """(peak bytes, growth over the start in bytes, where they come from)."""
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
    """A field of /proc/self/status in KiB (VmRSS, VmHWM); 0 where there is none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
