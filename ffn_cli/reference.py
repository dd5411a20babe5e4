"""An independent float64 forward for every variant, in plain NumPy.

Written from scratch in the tutorial's style (`x @ W1 + b1`, activation, `@ W2 + b2`), it
shares nothing with the torch modules but the weights: `weights` maps the module's
state_dict names to arrays in torch's (out, in) layout, which we transpose here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from ffn_cli.spec import FFNSpec

__all__ = ["ACTIVATIONS_NP", "reference_forward"]

Array = np.ndarray
_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu(z: Array) -> Array:
    return 0.5 * z * (1.0 + _erf(z / math.sqrt(2.0)).astype(np.float64))


def _gelu_tanh(z: Array) -> Array:
    return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))


def _sigmoid(z: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-z))


ACTIVATIONS_NP: dict[str, Callable[[Array], Array]] = {
    "relu": lambda z: np.maximum(0.0, z),
    "relu2": lambda z: np.maximum(0.0, z) ** 2,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "silu": lambda z: z * _sigmoid(z),
    "sigmoid": _sigmoid,
    "identity": lambda z: z,
}


def _linear(x: Array, w: Mapping[str, Array], name: str) -> Array:
    W = np.asarray(w[f"{name}.weight"], dtype=np.float64).T  # (in, out)
    out = x @ W
    bias = w.get(f"{name}.bias")
    return out if bias is None else out + np.asarray(bias, dtype=np.float64)


def _ffn(spec: FFNSpec, w: Mapping[str, Array], x: Array, prefix: str = "") -> Array:
    act = ACTIVATIONS_NP[spec.ffn_variant.activation]
    if spec.ffn_variant.family == "gated":
        if spec.fused_gate_up:
            gate_up = _linear(x, w, prefix + "gate_up_proj")
            half = gate_up.shape[-1] // 2
            gate, up = gate_up[..., :half], gate_up[..., half:]
        else:
            gate, up = _linear(x, w, prefix + "gate_proj"), _linear(x, w, prefix + "up_proj")
        hidden = act(gate) * up
    else:
        hidden = act(_linear(x, w, prefix + "up_proj"))
        if spec.family == "sparse":
            hidden = hidden * np.asarray(w[prefix + "hidden_mask"], dtype=np.float64)
    return _linear(hidden, w, prefix + "down_proj")


def _softmax(z: Array) -> Array:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _routed_moe(spec: FFNSpec, w: Mapping[str, Array], x: Array) -> Array:
    n = x.shape[0]
    probs = _softmax(_linear(x, w, "router"))  # (N, E)
    chosen = np.argsort(-probs, axis=-1, kind="stable")[:, : spec.top_k]  # (N, k)
    gates = np.take_along_axis(probs, chosen, axis=-1)
    if spec.normalize_top_k:
        gates = gates / gates.sum(axis=-1, keepdims=True)
    capacity = None
    if spec.capacity_factor is not None:
        capacity = math.ceil(spec.capacity_factor * n * spec.top_k / spec.experts)
    out = np.zeros_like(x)
    for e in range(spec.experts):
        rows, slots = np.nonzero(chosen == e)  # row-major: token order
        if capacity is not None:
            rows, slots = rows[:capacity], slots[:capacity]
        if rows.size:
            out[rows] += gates[rows, slots][:, None] * _ffn(spec, w, x[rows], f"experts.{e}.")
    return out


def _soft_moe(spec: FFNSpec, w: Mapping[str, Array], x: Array) -> Array:
    gates = _softmax(_linear(x, w, "router"))
    return sum(gates[:, e : e + 1] * _ffn(spec, w, x, f"experts.{e}.") for e in range(spec.experts))


def reference_forward(spec: FFNSpec, weights: Mapping[str, Array], x: Array) -> Array:
    """The FFN's output for input x (..., d_model), computed in float64."""
    x = np.asarray(x, dtype=np.float64)
    tokens = x.reshape(-1, x.shape[-1])
    if spec.variant == "moe":
        out = _routed_moe(spec, weights, tokens)
        if spec.shared_hidden:
            shared = _ffn(spec, weights, tokens, "shared_experts.")
            if spec.shared_expert_gate:
                shared = _sigmoid(_linear(tokens, weights, "shared_expert_gate")) * shared
            out = out + shared
    elif spec.variant == "soft_moe":
        out = _soft_moe(spec, weights, tokens)
    else:
        out = _ffn(spec, weights, tokens)
    return np.asarray(out).reshape(x.shape)
