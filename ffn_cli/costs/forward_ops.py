"""What one FFN's forward runs, op by op, for a forecast from a measured profile: each linear
as a GEMM of its own shape (tokens × its weight), its bias as an add over its output, the
activation and the gate multiply as elementwise passes over d_ff per token. Pure Python.

Priced: the single FFNs whose steps are linears, one measured activation and the gate multiply
(relu, gelu, swiglu, geglu, …). Not priced (None): mixtures (their dispatch depends on the
routing) and steps with an op of their own the profile does not time (a clamp, a mask, xIELU).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ffn_cli.accounting import flop_steps, param_tensors
from ffn_cli.hardware.dtypes import TABLE_DTYPE
from ffn_cli.hardware.predict import ElementwisePass, Gemm, Prediction, predict
from ffn_cli.hardware.profile import DeviceProfile
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import ACTIVATIONS, mixture_of, single_of

__all__ = ["ForwardOps", "forward_ops", "predict_forward", "priced_variants"]


@dataclass(frozen=True)
class ForwardOps:
    gemms: tuple[Gemm, ...]
    passes: tuple[ElementwisePass, ...]

    @property
    def calls(self) -> int:
        """Ops dispatched: one per GEMM (its bias rides in addmm) and one per elementwise pass
        other than a bias add."""
        return len(self.gemms) + sum(1 for p in self.passes if p.op != "add")


def _activation_ops(name: str) -> tuple[str, ...]:
    """The measured ops an activation runs (identity: none)."""
    act = ACTIVATIONS.get(name)
    if act is None:
        raise KeyError(name)
    return (name,) if act.runs_an_op else ()


def forward_ops(spec: FFNSpec, tokens: int) -> ForwardOps | None:
    """The GEMMs and elementwise passes of `spec`'s forward over `tokens` tokens in eval mode,
    or None when the spec is not one the forecast prices (see the module's doc)."""
    if mixture_of(spec.info) is not None:  # a mixture's forward is its routing too: not priced
        return None
    info = single_of(spec.info, spec)  # one FFN: the variant itself
    shapes = {t.name: t.shape for t in param_tensors(spec)}
    gemms: list[Gemm] = []
    passes: list[ElementwisePass] = []
    for step in flop_steps(spec):
        weight = shapes.get(f"{step.name}.weight")
        if step.matmul_flops and weight is not None:
            n, k = weight
            gemms.append(Gemm(step.name, tokens, n, k))
            if f"{step.name}.bias" in shapes:
                passes.append(ElementwisePass(f"{step.name}.bias", "add", tokens * n))
        elif step.name == "activation":
            try:
                ops = _activation_ops(info.act().name)
            except KeyError:
                return None
            passes += [ElementwisePass("activation", op, tokens * spec.hidden) for op in ops]
        elif step.name == "multiply":
            passes.append(ElementwisePass("multiply", "mul", tokens * spec.hidden))
        else:
            return None
    return ForwardOps(tuple(gemms), tuple(passes))


def priced_variants(variants: Iterable[str]) -> list[str]:
    """The registry's variants a forecast prices, each at its defaults."""
    return [name for name in variants if forward_ops(FFNSpec(variant=name, d_model=8, d_ff=8), 1) is not None]


def predict_forward(profile: DeviceProfile, spec: FFNSpec, tokens: int, dtype: str) -> Prediction | None:
    """The forecast of one forward of `spec` over `tokens` tokens in `dtype` (float32, bfloat16, …)
    on the profiled device; None when the profile cannot price it."""
    ops = forward_ops(spec, tokens)
    fixed = profile.ffn_call_s.get(spec.variant)
    if ops is None or fixed is None:
        return None
    return predict(profile, TABLE_DTYPE.get(dtype, dtype), ops.gemms, ops.passes, fixed)
