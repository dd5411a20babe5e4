"""What the recorder knows about aten ops: their FLOPs, and which ones only reshape, split,
allocate or keep autograd's books.

FLOPs: matmuls use torch.utils.flop_counter's registered formulas (2·m·n·k, the same numbers
FlopCounterMode reports; the recorder applies them); elementwise ops use the per-element
conventions of `accounting` (ELEMENTWISE_FLOPS below). Data movement, indexing and comparisons
count 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ffn_cli.variants import ACTIVATIONS

if TYPE_CHECKING:
    from torch import Tensor

    from ffn_cli.tracing.result import OpRecord

__all__ = [
    "ELEMENTWISE_FLOPS",
    "LAYOUT_OPS",
    "SKIPPED_OPS",
    "SPLIT_OPS",
    "UNINITIALISED_OPS",
    "conv_backward_flops",
    "elementwise_flops",
    "op_base",
    "still_drops",
]


# Operations per output element (our convention, shared with accounting.ACTIVATIONS).
ELEMENTWISE_FLOPS: dict[str, int] = {
    **dict.fromkeys(("add", "sub", "mul", "div", "neg", "pow", "rsqrt", "sqrt", "exp", "expm1", "tanh", "abs", "maximum", "minimum"), 1),
    "relu": ACTIVATIONS["relu"].flops_per_element,
    "silu": ACTIVATIONS["silu"].flops_per_element,
    "sigmoid": ACTIVATIONS["sigmoid"].flops_per_element,
    # F.glu(x) = a·σ(b) over the two halves of x: the sigmoid and one multiply per output element.
    "glu": ACTIVATIONS["sigmoid"].flops_per_element + 1,
    "leaky_relu": ACTIVATIONS["relu"].flops_per_element,  # a compare and a select, as relu's
    "erf": 1,
    "reciprocal": 1,
    "_softmax": 3,  # exp, sum, divide (accounting.SOFTMAX_FLOPS_PER_ELEMENT)
    "native_dropout": 2,  # mask and rescale, as the CPU path's div_ + mul
    "native_layer_norm": 7,  # mean, centre, square, variance, normalise, scale, shift
    # Backward kernels: the chain rule's work per element of the gradient they return.
    "threshold_backward": ACTIVATIONS["relu"].flops_per_element,  # dy where the output was positive
    "sigmoid_backward": 3,  # dy·σ·(1 − σ)
    "gelu_backward": ACTIVATIONS["gelu"].flops_per_element,  # dy·(Φ(z) + z·φ(z))
    "softplus_backward": 4,  # dy·σ(z)
    "_softmax_backward_data": 4,  # p·(dp − Σ dp·p): mul, sum, sub, mul
    "native_dropout_backward": 2,  # dy·mask·1/(1−p)
    # Per element of the gradient (both halves): dy·σ(b) for a, dy·a·σ(b)·(1 − σ(b)) for b.
    "glu_backward": 3,
}
# Reductions cost one operation per input element.
REDUCTION_OPS = ("sum", "mean")
# The same values in another layout (views, and the copy a reshape may make).
LAYOUT_OPS = ("view", "_unsafe_view", "reshape", "_reshape_alias", "t", "transpose", "expand", "unsqueeze", "squeeze", "clone")
# One tensor cut into several (a fused gate_up projection into gate and up).
SPLIT_OPS = ("split", "split_with_sizes", "chunk", "unsafe_split")
# Allocations whose values are whatever memory held: no statistics (they would show garbage).
UNINITIALISED_OPS = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided")
# Autograd bookkeeping and metadata queries that are not part of the forward computation.
SKIPPED_OPS = ("detach", "promote_types", "lift_fresh")


def elementwise_flops(name: str, kwargs: dict[str, Any], inputs: list[Tensor], outputs: list[Tensor]) -> int:
    """Non-matmul FLOPs of one op by our per-element convention (see module docstring)."""
    base = name.removesuffix("_")  # in-place forms (div_, mul_) count as their functional ones
    out_numel = outputs[0].numel() if outputs else 0
    if base == "gelu":
        act = "gelu_tanh" if kwargs.get("approximate") == "tanh" else "gelu"
        return ACTIVATIONS[act].flops_per_element * out_numel
    if base in ("addmm", "baddbmm"):
        return out_numel  # the bias add; 2·m·n·k is the matmul part
    if base in REDUCTION_OPS:
        return inputs[0].numel() if inputs else 0
    if base == "index_add":
        return inputs[-1].numel() if inputs else 0  # one add per source element
    return ELEMENTWISE_FLOPS.get(base, 0) * out_numel


def op_base(op: str) -> str:
    """A recorded op's bare name: aten.addmm.default → addmm; a torch call torch.linear → linear."""
    return op.removeprefix("aten.").removeprefix("torch.").split(".")[0]


def conv_backward_flops(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, int]:
    """aten.convolution_backward's FLOPs as (input's gradient, weight's gradient), ffn's own
    rule: each is one multiply-add per multiply-add of the forward, 2·batch·(elements of the
    weight)·(positions the weight slides over: the output's for a convolution, the input's for
    a transposed one). The weight's shape already divides its input channels by `groups`;
    FlopCounterMode's weight-gradient formula multiplies both channel counts whole, `groups`
    times too many for a grouped convolution (C times for a depthwise one)."""
    names = ("grad_output", "input", "weight", "bias_sizes", "stride", "padding", "dilation", "transposed", "output_padding")
    named = dict(zip((*names, "groups", "output_mask"), args, strict=False)) | kwargs
    grad_out, x, weight = named["grad_output"], named["input"], named["weight"]
    slides = x.shape[2:] if named["transposed"] else grad_out.shape[2:]
    each = 2 * int(x.shape[0]) * int(weight.numel()) * math.prod(int(n) for n in slides)
    mask = named["output_mask"]
    return (each if mask[0] else 0, each if mask[1] else 0)


def still_drops(ops: Iterable[OpRecord]) -> bool:
    """Whether these ops are a dropout that ran as in training: a dropout does arithmetic (its
    mask and rescale) only when it drops; in eval mode nn.Dropout and F.dropout(…,
    training=False) hand their input on untouched."""
    ops = list(ops)
    named = any("dropout" in op.op or "bernoulli" in op.op or "dropout" in op.function for op in ops)
    return named and sum(op.elementwise_flops for op in ops) > 0
