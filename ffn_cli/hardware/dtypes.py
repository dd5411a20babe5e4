"""Which column of the GPU table a run's dtype reads."""

from __future__ import annotations

__all__ = ["TABLE_DTYPE", "peak_dtype_key"]

# PyTorch's dtype names (as --dtype takes them) → the table's columns.
TABLE_DTYPE = {"float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float8": "fp8"}


def peak_dtype_key(dtype: str, tf32: bool) -> str:
    """The table column a run uses: float32 matmuls count at the TF32 rate when TF32 is on."""
    if dtype == "float32" and tf32:
        return "tf32"
    return TABLE_DTYPE.get(dtype, dtype)
