"""One FFN computed from a weight dict (a TP shard or one EP expert), and the tensor-parallel forward.

The math is the unsharded module's, written on the shard's tensors so every step's shape can be
logged; the comparison with the unsharded module checks it.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch.nn.functional as F
from torch import Tensor

from ffn_cli.modules import activation_fn
from ffn_cli.parallel.steps import StepLog, all_reduce_sum
from ffn_cli.spec import FFNSpec

__all__ = ["local_ffn", "tp_forward"]


def _linear(w: Mapping[str, Tensor], name: str, x: Tensor, *, bias: bool = True) -> Tensor:
    return F.linear(x, w[name + ".weight"], w.get(name + ".bias") if bias else None)


def _gate_up(w: Mapping[str, Tensor], spec: FFNSpec, x: Tensor, prefix: str, log: StepLog) -> tuple[Tensor, Tensor]:
    if spec.fused_gate_up:
        gate_up = _linear(w, prefix + "gate_up_proj", x)  # (…, 2·d_ff/tp): gate[r] rows, then up[r] rows
        log.step(prefix + "gate_up_proj", "x·W_gate_up[r]ᵀ", [x], gate_up)
        gate, up = gate_up.chunk(2, dim=-1)  # (…, d_ff/tp) each
        return gate, up
    gate = _linear(w, prefix + "gate_proj", x)  # (…, d_ff/tp)
    log.step(prefix + "gate_proj", "x·W_gate[r]ᵀ", [x], gate)
    up = _linear(w, prefix + "up_proj", x)  # (…, d_ff/tp)
    log.step(prefix + "up_proj", "x·W_up[r]ᵀ", [x], up)
    return gate, up


def local_ffn(
    w: Mapping[str, Tensor], spec: FFNSpec, x: Tensor, *, prefix: str = "", down_bias: bool = True, log: StepLog | None = None
) -> Tensor:
    """The FFN of `spec.ffn_variant` on the tensors named prefix + `up_proj.weight`, … (eval mode: no dropout).

    down_bias=False leaves b_down out: a row-parallel rank adds it once, after the all-reduce.
    """
    log = log or StepLog(enabled=False)
    act_name = spec.ffn_variant.activation
    act = activation_fn(act_name)
    if spec.ffn_variant.family == "gated":
        gate, up = _gate_up(w, spec, x, prefix, log)
        a = act(gate)
        log.step(prefix + "activation", f"{act_name}(gate)", [gate], a)
        h = a * up  # (…, d_ff/tp)
        log.step(prefix + "multiply", f"{act_name}(gate) ⊙ up", [a, up], h)
    else:
        pre = _linear(w, prefix + "up_proj", x)  # (…, d_ff/tp)
        log.step(prefix + "up_proj", "x·W_up[r]ᵀ" + (" + b_up[r]" if spec.bias else ""), [x], pre)
        h = act(pre)
        log.step(prefix + "activation", f"{act_name}(h)", [pre], h)
        mask = w.get(prefix + "hidden_mask")
        if mask is not None:
            masked = h * mask  # this rank's slice of the fixed mask
            log.step(prefix + "mask", "m[r] ⊙ h", [h, mask], masked)
            h = masked
    out = _linear(w, prefix + "down_proj", h, bias=down_bias)  # (…, d)
    log.step(prefix + "down_proj", "h[r]·W_down[:, r]ᵀ" + (" + b_down" if down_bias and spec.bias else " (partial sum)"), [h], out)
    return out


def tp_forward(shard: Mapping[str, Tensor], spec: FFNSpec, x: Tensor, log: StepLog) -> Tensor:
    """Column-parallel gate/up, row-parallel down, all-reduce (sum), then b_down once."""
    partial = local_ffn(shard, spec, x, down_bias=False, log=log)  # (B, T, d): this rank's share of the sum
    out = all_reduce_sum(partial, log, "down_proj partial sums")  # (B, T, d)
    bias = shard.get("down_proj.bias")
    if bias is not None:
        out = out + bias
        log.step("down_proj.bias", "+ b_down, once, after the sum", [out], out)
    return out
