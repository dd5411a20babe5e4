"""Parameters, FLOPs and bytes of an FFN, from its spec alone (pure Python, no torch).

Conventions: a matmul of (m×k)·(k×n) costs 2·m·n·k FLOPs, the count PyTorch's
FlopCounterMode uses; a bias add is not part of it. Everything elementwise (bias adds,
activations, the gate multiply, softmax, the mixture's weighted sum) is counted apart and
labelled, at ACTIVATIONS[...].flops_per_element operations per element.
"""

from __future__ import annotations

from dataclasses import dataclass

from ffn_cli.spec import FFNSpec
from ffn_cli.variants import ACTIVATIONS, DENSE_TENSORS, FUSED_GATED_TENSORS, GATED_TENSORS, TensorTemplate

__all__ = [
    "DTYPE_BYTES",
    "FlopStep",
    "ParamTensor",
    "activation_elements_per_token",
    "active_params",
    "flop_steps",
    "flops_per_token",
    "matmul_flops_formula",
    "matmul_flops_per_token",
    "param_formula",
    "param_tensors",
    "total_params",
]

DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8": 1}

# Operations per element of the MoE gate's float32 softmax: exp, sum, divide.
SOFTMAX_FLOPS_PER_ELEMENT = 3


@dataclass(frozen=True)
class ParamTensor:
    name: str
    shape: tuple[int, ...]

    @property
    def count(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@dataclass(frozen=True)
class FlopStep:
    """One logical step of the forward pass, for one token."""

    name: str
    matmul_flops: int
    elementwise_flops: int
    formula: str

    @property
    def flops(self) -> int:
        return self.matmul_flops + self.elementwise_flops


def _layout(spec: FFNSpec) -> tuple[TensorTemplate, ...]:
    family = spec.ffn_variant.family
    if family == "gated":
        return FUSED_GATED_TENSORS if spec.fused_gate_up else GATED_TENSORS
    return DENSE_TENSORS


def _resolve(templates: tuple[TensorTemplate, ...], prefix: str, bias: bool, dims: dict[str, int]) -> list[ParamTensor]:
    return [ParamTensor(prefix + t.name, tuple(dims[s] for s in t.dims)) for t in templates if bias or not t.is_bias]


def _ffn_tensors(spec: FFNSpec, d_ff: int, prefix: str = "") -> list[ParamTensor]:
    dims = {"d": spec.d_model, "f": d_ff, "2f": 2 * d_ff}
    return _resolve(_layout(spec), prefix, bool(spec.bias), dims)


def param_tensors(spec: FFNSpec) -> list[ParamTensor]:
    """Every parameter tensor, named as build_ffn names it (buffers such as the sparse mask excluded)."""
    if not spec.is_moe:
        return _ffn_tensors(spec, spec.hidden)
    d = spec.d_model
    tensors = [ParamTensor("router.weight", (spec.experts, d))]
    for i in range(spec.experts):
        tensors += _ffn_tensors(spec, spec.hidden, f"experts.{i}.")
    if spec.shared_hidden:
        tensors += _ffn_tensors(spec, spec.shared_hidden, "shared_experts.")
        if spec.shared_expert_gate:
            tensors.append(ParamTensor("shared_expert_gate.weight", (1, d)))
    return tensors


def total_params(spec: FFNSpec) -> int:
    return sum(t.count for t in param_tensors(spec))


def _one_ffn_params(spec: FFNSpec, d_ff: int) -> int:
    return sum(t.count for t in _ffn_tensors(spec, d_ff))


def active_params(spec: FFNSpec) -> int:
    """Parameters one token touches: for top-k MoE the router, k experts and the shared ones."""
    if spec.variant != "moe":
        return total_params(spec)
    return total_params(spec) - (spec.experts - spec.top_k) * _one_ffn_params(spec, spec.hidden)


def param_formula(spec: FFNSpec) -> str:
    """The closed form of total_params, e.g. '3·d·d_ff' or '2·d·d_ff + d_ff + d'."""
    gated = spec.ffn_variant.family == "gated"
    one = ("3·d·d_ff" if gated else "2·d·d_ff") + ((" + 2·d_ff + d" if gated else " + d_ff + d") if spec.bias else "")
    if not spec.is_moe:
        return one
    text = f"E·d + E·({one})"
    if spec.shared_hidden:
        text += " + shared(" + one.replace("d_ff", "d_sh") + ")"
        if spec.shared_expert_gate:
            text += " + d"
    return text


def matmul_flops_formula(spec: FFNSpec) -> str:
    """The closed form of matmul_flops_per_token, e.g. '6·d·d_ff'."""
    one = "6·d·d_ff" if spec.ffn_variant.family == "gated" else "4·d·d_ff"
    if not spec.is_moe:
        return one
    k = "E" if spec.variant == "soft_moe" else "k"
    text = f"2·d·E + {k}·{one}"
    if spec.shared_hidden:
        text += " + " + one.replace("d_ff", "d_sh")
    return text


def _ffn_steps(spec: FFNSpec, d_ff: int, prefix: str = "") -> list[FlopStep]:
    d, f = spec.d_model, d_ff
    act = ACTIVATIONS[spec.ffn_variant.activation]
    b = 1 if spec.bias else 0
    steps: list[FlopStep] = []
    if spec.ffn_variant.family == "gated":
        if spec.fused_gate_up:
            steps.append(FlopStep(prefix + "gate_up_proj", 4 * d * f, 2 * f * b, "x·W_gate_upᵀ"))
        else:
            steps.append(FlopStep(prefix + "gate_proj", 2 * d * f, f * b, "x·W_gateᵀ"))
            steps.append(FlopStep(prefix + "up_proj", 2 * d * f, f * b, "x·W_upᵀ"))
        steps.append(FlopStep(prefix + "activation", 0, act.flops_per_element * f, f"{act.name}(gate)"))
        steps.append(FlopStep(prefix + "multiply", 0, f, f"{act.name}(gate) ⊙ up"))
    else:
        steps.append(FlopStep(prefix + "up_proj", 2 * d * f, f * b, "x·W_upᵀ" + (" + b_up" if b else "")))
        steps.append(FlopStep(prefix + "activation", 0, act.flops_per_element * f, f"{act.name}(h)"))
        if spec.family == "sparse":
            steps.append(FlopStep(prefix + "mask", 0, f, "m ⊙ h"))
    steps.append(FlopStep(prefix + "down_proj", 2 * d * f, d * b, "h·W_downᵀ" + (" + b_down" if b else "")))
    return steps


def _scale(steps: list[FlopStep], k: int) -> list[FlopStep]:
    return [FlopStep(s.name, k * s.matmul_flops, k * s.elementwise_flops, s.formula) for s in steps]


def flop_steps(spec: FFNSpec) -> list[FlopStep]:
    """FLOPs of each forward step for one token, in eval mode; MoE steps follow the active path."""
    if not spec.is_moe:
        return _ffn_steps(spec, spec.hidden)
    d, e, k = spec.d_model, spec.experts, spec.active_experts
    steps = [
        FlopStep("router", 2 * d * e, 0, "x·W_routerᵀ"),
        FlopStep("softmax", 0, SOFTMAX_FLOPS_PER_ELEMENT * e, "softmax over E in float32"),
    ]
    if spec.variant == "moe" and spec.normalize_top_k:
        steps.append(FlopStep("renormalise", 0, 2 * k, "top-k weights / their sum"))
    steps += _scale(_ffn_steps(spec, spec.hidden, "expert."), k)
    steps.append(FlopStep("combine", 0, 2 * k * d, "Σ_k g_k·y_k"))
    if spec.shared_hidden:
        steps += _ffn_steps(spec, spec.shared_hidden, "shared_experts.")
        if spec.shared_expert_gate:
            steps.append(FlopStep("shared_expert_gate", 2 * d, 4 + 2 * d, "σ(x·w_g)·shared + routed"))
        else:
            steps.append(FlopStep("shared_add", 0, d, "shared + routed"))
    return steps


def flops_per_token(spec: FFNSpec) -> int:
    return sum(s.flops for s in flop_steps(spec))


def matmul_flops_per_token(spec: FFNSpec) -> int:
    return sum(s.matmul_flops for s in flop_steps(spec))


def activation_elements_per_token(spec: FFNSpec) -> int:
    """Elements autograd keeps per token for backward, in eval mode (no dropout mask), for the
    unfused layout; MoE counts the active path plus the router's probabilities.

    Dense: x, the hidden h that feeds down_proj, and the pre-activation when the activation
    needs its input (gelu, silu) or a mask follows it (sparse). Gated: x, up, the product
    that feeds down_proj, the activated gate, and the pre-activation gate when needed.
    """
    saves_input = ACTIVATIONS[spec.ffn_variant.activation].saves_input

    def one(f: int) -> int:
        if spec.ffn_variant.family == "gated":
            return spec.d_model + 3 * f + (f if saves_input else 0)
        return spec.d_model + f + (f if saves_input or spec.family == "sparse" else 0)

    if not spec.is_moe:
        return one(spec.hidden)
    kept = spec.d_model + spec.experts + spec.active_experts * one(spec.hidden)
    if spec.shared_hidden:
        kept += one(spec.shared_hidden)
    return kept
