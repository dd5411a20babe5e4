"""Parameters, FLOPs and bytes of an FFN, from its spec alone (pure Python, no torch).

Every number comes from the spec's variant object (`ffn_cli.variants`); this module only sums.
Conventions: a matmul of (m×k)·(k×n) costs 2·m·n·k FLOPs, the count PyTorch's
FlopCounterMode uses; a bias add is not part of it. Everything elementwise (bias adds,
activations, the gate multiply, softmax, the mixture's weighted sum) is counted apart and
labelled, at ACTIVATIONS[...].flops_per_element operations per element.
"""

from __future__ import annotations

from ffn_cli.spec import FFNSpec
from ffn_cli.variants import FlopStep, ParamTensor, SavedTensor

__all__ = [
    "DTYPE_BYTES",
    "FlopStep",
    "ParamTensor",
    "activation_bytes",
    "activation_elements_per_token",
    "active_params",
    "flop_steps",
    "flops_per_token",
    "matmul_flops_formula",
    "matmul_flops_per_token",
    "param_formula",
    "param_tensors",
    "saved_tensors",
    "total_params",
]

DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8": 1}


def param_tensors(spec: FFNSpec) -> list[ParamTensor]:
    """Every parameter tensor, named as build_ffn names it (buffers such as the sparse mask excluded)."""
    return spec.info.param_tensors(spec)


def total_params(spec: FFNSpec) -> int:
    return sum(t.count for t in param_tensors(spec))


def active_params(spec: FFNSpec) -> int:
    """Parameters one token touches: for top-k MoE the router, k experts and the shared ones."""
    return spec.info.active_params(spec)


def param_formula(spec: FFNSpec) -> str:
    """The closed form of total_params, e.g. '3·d·d_ff' or '2·d·d_ff + d_ff + d'."""
    return spec.info.param_formula(spec)


def matmul_flops_formula(spec: FFNSpec) -> str:
    """The closed form of matmul_flops_per_token, e.g. '6·d·d_ff'."""
    return spec.info.matmul_flops_formula(spec)


def flop_steps(spec: FFNSpec) -> list[FlopStep]:
    """FLOPs of each forward step for one token, in eval mode; MoE steps follow the active path."""
    return spec.info.flop_steps(spec)


def flops_per_token(spec: FFNSpec) -> int:
    return sum(s.flops for s in flop_steps(spec))


def matmul_flops_per_token(spec: FFNSpec) -> int:
    return sum(s.matmul_flops for s in flop_steps(spec))


def saved_tensors(spec: FFNSpec) -> list[SavedTensor]:
    """What autograd keeps for backward, in eval mode (no dropout mask), for the unfused layout."""
    return spec.info.saved_tensors(spec)


def activation_elements_per_token(spec: FFNSpec) -> int:
    """Elements autograd keeps per token for backward (values, indices and masks alike)."""
    return sum(s.per_token for s in saved_tensors(spec))


def activation_bytes(spec: FFNSpec, tokens: int, dtype: str) -> int:
    """Bytes autograd keeps for backward over `tokens` tokens in `dtype`: each saved tensor at
    its own width (the router's float32 probabilities, int64 indices, bool masks)."""
    return sum(s.bytes_(tokens, DTYPE_BYTES[dtype]) for s in saved_tensors(spec))
