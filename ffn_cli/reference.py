"""An independent float64 forward (and backward) for every variant, in plain NumPy.

Each variant writes its own NumPy forward from its formula, in the tutorial's style
(`x @ W1 + b1`, activation, `@ W2 + b2`), sharing nothing with the torch path but the
weights: `weights` maps the module's state_dict names to arrays in torch's (out, in) layout.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ffn_cli.spec import FFNSpec

__all__ = ["reference_backward", "reference_forward"]


def reference_forward(spec: FFNSpec, weights: Mapping[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The FFN's output for input x (..., d_model), computed in float64."""
    x = np.asarray(x, dtype=np.float64)
    arrays = {name: np.asarray(w, dtype=np.float64) for name, w in weights.items()}
    out = spec.info.numpy_forward(spec, arrays, x.reshape(-1, x.shape[-1]))
    return np.asarray(out).reshape(x.shape)


def reference_backward(
    spec: FFNSpec, weights: Mapping[str, np.ndarray], x: np.ndarray, grad_out: np.ndarray
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(dL/dx, dL/dθ by state_dict name) for an output gradient dL/dy, in float64: each
    variant's backward differentiated by hand beside its forward."""
    x = np.asarray(x, dtype=np.float64)
    arrays = {name: np.asarray(w, dtype=np.float64) for name, w in weights.items()}
    tokens = x.reshape(-1, x.shape[-1])
    grad_x, grads = spec.info.numpy_backward(spec, arrays, tokens, np.asarray(grad_out, dtype=np.float64).reshape(tokens.shape))
    return np.asarray(grad_x).reshape(x.shape), grads
