"""The tensor-parallel forward: the variant's own forward, run on one rank's shard.

`ShardWeights` gives the variant's forward the shard's tensors (names as in the unsharded
module) and logs every step's shapes; down_proj's partial sums are then all-reduced and its
bias added once. The comparison with the unsharded module checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch.nn.functional as F
from torch import Tensor

from ffn_cli.parallel.steps import StepLog, all_reduce_sum
from ffn_cli.spec import FFNSpec

__all__ = ["ShardWeights", "local_ffn", "tp_forward"]


class ShardWeights:
    """A shard seen through the variant's `Weights` interface (eval mode: no dropout).

    down_bias=False leaves b_down out: a row-parallel rank adds it once, after the all-reduce.
    """

    def __init__(self, shard: Mapping[str, Tensor], spec: FFNSpec, log: StepLog, *, prefix: str = "", down_bias: bool = True) -> None:
        self.shard, self.spec, self.log, self.prefix, self.down_bias = shard, spec, log, prefix, down_bias

    def _log(self, step: str, inputs: list[Any], out: Any) -> None:
        formula = self.spec.ffn_variant.tp_step_formula(self.spec, step, self.down_bias)
        if formula is not None and isinstance(out, Tensor):
            self.log.step(self.prefix + step, formula, [t for t in inputs if isinstance(t, Tensor)], out)

    def linear(self, name: str, x: Tensor) -> Tensor:
        with_bias = self.down_bias or name != "down_proj"
        full = self.prefix + name
        out = F.linear(x, self.shard[full + ".weight"], self.shard.get(full + ".bias") if with_bias else None)
        self._log(name, [x], out)
        return out

    call = linear

    def tensor(self, name: str) -> Tensor:
        return self.shard[self.prefix + name]

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        out = fn(*args)
        self._log(name, list(args), out)
        return out

    def dropout(self, h: Tensor) -> Tensor:
        return h


def local_ffn(
    w: Mapping[str, Tensor], spec: FFNSpec, x: Tensor, *, prefix: str = "", down_bias: bool = True, log: StepLog | None = None
) -> Tensor:
    """The FFN of `spec.ffn_variant` on the tensors named prefix + `up_proj.weight`, … (a TP shard or one expert)."""
    weights = ShardWeights(w, spec, log or StepLog(enabled=False), prefix=prefix, down_bias=down_bias)
    return spec.ffn_variant.forward(spec, weights, x)


def tp_forward(shard: Mapping[str, Tensor], spec: FFNSpec, x: Tensor, log: StepLog) -> Tensor:
    """Column-parallel gate/up, row-parallel down, all-reduce (sum), then b_down once."""
    partial = local_ffn(shard, spec, x, down_bias=False, log=log)  # (B, T, d): this rank's share of the sum
    out = all_reduce_sum(partial, log, "down_proj partial sums")  # (B, T, d)
    bias = shard.get("down_proj.bias")
    if bias is not None:
        out = out + bias
        log.step("down_proj.bias", "+ b_down, once, after the sum", [out], out)
    return out
