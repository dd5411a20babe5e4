"""The ways to run the same FFN (weight layout × torch.compile mode), by name and by flags."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.names import split_list

__all__ = ["COMPILE_MODES", "IMPLS", "Impl", "compile_module", "impl_for", "keep_ieee_subnormals", "parse_impls", "subnormals_flushed"]

COMPILE_MODES = ("default", "max-autotune-no-cudagraphs", "max-autotune", "reduce-overhead")


@dataclass(frozen=True)
class Impl:
    """One way to run the same FFN: weight layout and compilation."""

    name: str
    fused: bool
    compile_mode: str | None
    summary: str


IMPLS: dict[str, Impl] = {
    i.name: i
    for i in (
        Impl("eager", False, None, "the module as built (gated: separate gate_proj and up_proj)"),
        Impl("fused", True, None, "one gate_up_proj GEMM of 2·d_ff rows, then chunk (gated only)"),
        Impl("compile", False, "default", "torch.compile: the elementwise steps become one kernel"),
        Impl("fused-compile", True, "default", "torch.compile of the fused layout"),
        Impl("autotune", False, "max-autotune-no-cudagraphs", "torch.compile autotuning each GEMM (Triton templates vs cuBLAS)"),
        Impl("fused-autotune", True, "max-autotune-no-cudagraphs", "autotuned torch.compile of the fused layout"),
    )
}


def impl_for(*, fused: bool, compile_mode: str | None) -> Impl:
    """The implementation that `--fused` / `--compile` / `--compile-mode` name."""
    if compile_mode is not None and compile_mode not in COMPILE_MODES:
        raise FFNError("compile_mode", compile_mode, _("choose one of {compile_modes}").format(compile_modes=", ".join(COMPILE_MODES)))
    for impl in IMPLS.values():
        if impl.fused == fused and impl.compile_mode == compile_mode:
            return impl
    name = ("fused-" if fused else "") + f"compile[{compile_mode}]"
    return Impl(name, fused, compile_mode, f"torch.compile mode={compile_mode}")


def parse_impls(text: str) -> list[Impl]:
    """'eager,fused-compile' → Impls; 'all' → every one."""
    names = split_list("impl", text, empty=_("a comma list of {impls}, or all").format(impls=", ".join(IMPLS)))
    if names == ["all"]:
        return list(IMPLS.values())
    if any(n not in IMPLS for n in names):
        raise FFNError("impl", text, _("a comma list of {impls}, or all").format(impls=", ".join(IMPLS)))
    return [IMPLS[n] for n in names]


def compile_module(module: torch.nn.Module, mode: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """torch.compile for one case: static shapes, and no cache carried over from other cases."""
    # A fresh Dynamo cache per case: every module of a sweep shares FFNModule.forward, and a
    # shared cache would hit its recompile limit (then silently run eager) or go dynamic.
    torch.compiler.reset()
    return torch.compile(module, mode=mode, dynamic=False)


@contextlib.contextmanager
def keep_ieee_subnormals() -> Iterator[None]:
    """Undo the flush-to-zero that loading compiled kernels turned on while this ran.

    torch.compile's CPU kernels are shared libraries; where they are linked with -ffast-math
    (seen with torch 2.4 and GCC 12), loading one sets flush-to-zero and denormals-are-zero in
    the loading thread, which changes every later float result and timing of the process.
    """
    before = subnormals_flushed()
    try:
        yield
    finally:
        if subnormals_flushed() and not before:
            torch.set_flush_denormal(False)


def subnormals_flushed() -> bool:
    """Whether this thread's float unit flushes subnormal results to zero."""
    smallest_normal = sys.float_info.min
    return smallest_normal / 2 == 0.0
