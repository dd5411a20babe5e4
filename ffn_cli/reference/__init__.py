"""An independent float64 forward (and backward) for every variant, in plain NumPy.

Each variant's form is written from its formula, in the tutorial's style (`x @ W1 + b1`,
activation, `@ W2 + b2`), sharing nothing with the torch path but the weights: `weights` maps
the module's state_dict names to arrays in torch's (out, in) layout. One module per family
(`dense.py`, `gated.py`, `moe.py`, `soft_moe.py`) and per variant that changes a step of its
family's (`sparse.py`, `xielu.py`, `swiglu_clamp.py`); `forms.py` finds a variant's form by its
class; `activations.py` holds the elementwise activations; `numpy_ops.py` what they share.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

# Each form module registers its forms as it is imported: all of them, before any lookup.
from ffn_cli.reference import dense, gated, moe, soft_moe, sparse, swiglu_clamp, xielu  # noqa: F401
from ffn_cli.reference.forms import form_of
from ffn_cli.spec import FFNSpec

__all__ = ["form_of", "reference_backward", "reference_forward"]


def reference_forward(spec: FFNSpec, weights: Mapping[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The FFN's output for input x (..., d_model), computed in float64."""
    x = np.asarray(x, dtype=np.float64)
    arrays = {name: np.asarray(w, dtype=np.float64) for name, w in weights.items()}
    out = form_of(spec.info).forward(spec, arrays, x.reshape(-1, x.shape[-1]))
    return np.asarray(out).reshape(x.shape)


def reference_backward(
    spec: FFNSpec, weights: Mapping[str, np.ndarray], x: np.ndarray, grad_out: np.ndarray
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(dL/dx, dL/dθ by state_dict name) for an output gradient dL/dy, in float64: each
    variant's backward differentiated by hand beside its forward."""
    x = np.asarray(x, dtype=np.float64)
    arrays = {name: np.asarray(w, dtype=np.float64) for name, w in weights.items()}
    tokens = x.reshape(-1, x.shape[-1])
    grad_x, grads = form_of(spec.info).backward(spec, arrays, tokens, np.asarray(grad_out, dtype=np.float64).reshape(tokens.shape))
    return np.asarray(grad_x).reshape(x.shape), grads
