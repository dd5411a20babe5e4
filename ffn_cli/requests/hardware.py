"""What `ffn hardware` is asked, checked once: the GPU table (every row, or the one --gpu names),
with this CPU as measured (--measure-cpu), or a profile of this device (--measure), and each
option the answer would ignore refused."""

from __future__ import annotations

from dataclasses import dataclass

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _

__all__ = ["CPU_GEMM_DTYPES", "HardwareRequest"]

CPU_GEMM_DTYPES = ("float32", "bfloat16")  # the dtypes --measure-cpu times its GEMM in


@dataclass(frozen=True)
class HardwareRequest:
    """`ffn hardware`'s options, each field an option of the same name with its default."""

    gpu: str | None = None
    measure: bool = False
    quick: bool = False
    threads: int | None = None
    measure_cpu: bool = False
    dtype: str = "float32"

    def __post_init__(self) -> None:
        # In this order: the first wrong option is the one named.
        if self.measure:
            if self.gpu is not None or self.measure_cpu:
                raise FFNError("measure", True, _("profiles this device alone: drop --gpu and --measure-cpu"))
            if self.threads is not None and not 1 <= self.threads <= 4096:
                raise FFNError("threads", self.threads, _("an integer in [1, 4096]"))
            return  # --dtype sizes the CPU row alone: a profile measures its own dtypes
        if self.quick or self.threads is not None:
            raise FFNError("quick" if self.quick else "threads", self.quick or self.threads, _("sizes --measure: add --measure"))
        if self.dtype not in CPU_GEMM_DTYPES:
            raise FFNError("dtype", self.dtype, _("the CPU GEMM is measured in float32 or bfloat16"))
