"""`ffn trace --explain`: a line or two on why each step is there.

A step of a registry variant is explained by its variant (`Variant.step_explanation`, with the
spec's own numbers); any other step (your module's, transformers' own, the block's attention
and norms) by what the trace saw it do: the class of the module it called, its aten ops, its
shapes. Explanations are message ids with their values, said in the reader's language."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from ffn_cli.i18n import N_, Message, _
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.tracing.expert_summary import summarise_experts
from ffn_cli.tracing.ops import SPLIT_OPS, op_base
from ffn_cli.tracing.result import BackwardStep, TraceResult, TraceStep

__all__ = ["backward_explanation", "explain_table", "step_explanation"]

# Module classes and aten ops (the name after `aten.`) that say what kind of step it is.
_ACTIVATION_CLASSES = ("ReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Mish", "ELU", "LeakyReLU", "Softplus", "ReLU6", "GLU")
_ACTIVATION_OPS = ("relu", "gelu", "silu", "sigmoid", "tanh", "mish", "elu", "leaky_relu", "softplus", "hardtanh")
_NORM_OPS = ("native_layer_norm", "layer_norm", "rms_norm", "_fused_rms_norm", "rsqrt")
_MATMUL_OPS = ("mm", "addmm", "bmm", "matmul", "linear")
_LAYOUT_OPS: tuple[str, ...] = ("view", "_unsafe_view", "reshape", "transpose", "t", "permute", "expand", "split", "chunk")
_GRAD_COPY_OPS = {"copy_", "new_empty_strided", "empty_like", "new_zeros", "zeros_like"}
# A backward that puts rows back where the forward took them from (the gradient of a gather).
_PLACING_OPS = {"index_put", "index_put_", "index_add", "index_add_", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_select"}
# A derivative that mixes a row: each output of the forward depended on its whole row.
_ROW_OPS = {"sum", "mean", "_softmax_backward_data", "_log_softmax_backward_data"}
_LAYOUT_OPS += ("split_with_sizes", "unsqueeze", "squeeze", "contiguous", "clone", "flatten", "slice", "select", "cat", "stack", "alias")


def _ops(step: TraceStep) -> set[str]:
    """aten.addmm.default → addmm; torch.linear (a torch call) → linear."""
    return {op_base(op) for op in step.aten_ops}


def _linear(step: TraceStep) -> Message:
    a = step.input_shapes[0][-1] if step.input_shapes and step.input_shapes[0] else 0
    b = step.output_shape[-1] if step.output_shape else 0
    if a < b:
        return Message.of(N_("a linear layer: widens each token from {a} to {b} features"), a=a, b=b)
    if a > b:
        return Message.of(N_("a linear layer: narrows each token from {a} back to {b} features"), a=a, b=b)
    return Message.of(N_("a linear layer: mixes each token's {a} features into {b} new ones, at the same width"), a=a, b=b)


def _multiplies_two(step: TraceStep) -> bool:
    """An elementwise product of two tensors: a gate and what it scales."""
    return "mul" in _ops(step) and len(step.inputs_from) >= 2


def _gates(result: TraceResult, step: TraceStep) -> bool:
    """Whether the step's output is one factor of an elementwise product (a gated FFN's gate)."""
    return any(step.name in s.inputs_from and _multiplies_two(s) for s in result.steps)


def _generic(result: TraceResult, step: TraceStep) -> Message | None:
    """What the step is, from what the trace saw: its module's class, its ops, its shapes, and
    whether a product reads it (a gate)."""
    cls, ops, leaf = step.module_class, _ops(step), step.name.rsplit(".", 1)[-1]
    weighted = any(len(p.shape) == 2 and not p.buffer for p in step.params)
    if cls == "Linear" or (weighted and ops & set(_MATMUL_OPS)):
        return _linear(step)
    if cls.startswith("Dropout") or "dropout" in ops or "native_dropout" in ops or leaf.startswith("dropout"):
        if result.mode == "eval" and step.elementwise_flops:  # a dropout does arithmetic only when it drops
            return Message.of(
                N_(
                    "dropout that still drops in eval mode: it zeroed a share p of the values and scaled the rest by "
                    "1/(1−p), as in training. F.dropout defaults to training=True: pass training=self.training "
                    "(nn.Dropout follows the module's mode)"
                )
            )
        return Message.of(
            N_("dropout: the identity in eval mode; in train mode it zeroes a share p of the values and scales the rest by 1/(1−p)")
        )
    if cls in _ACTIVATION_CLASSES or cls.endswith("Activation") or ops & set(_ACTIVATION_OPS):
        if _gates(result, step):
            return Message.of(
                N_(
                    "an activation function on a gate: without it the product it feeds would be bilinear, "
                    "still not linear (a product of two projections), but with no nonlinearity to shape the gate"
                )
            )
        return Message.of(
            N_(
                "an activation function: the nonlinearity, without which the linear layers around it "
                "would collapse into one, (xW₁)W₂ = x(W₁W₂)"
            )
        )
    if "Norm" in cls or ops & set(_NORM_OPS):
        return Message.of(N_("a norm: rescales each token's features to a steady size, so the layers after it see values in range"))
    if "_softmax" in ops or "softmax" in ops:
        return Message.of(N_("a softmax: turns scores into weights that are positive and sum to 1"))
    if ops & set(_MATMUL_OPS):
        return Message.of(N_("a matrix product of two activations (no weights): each row against each column"))
    if ops and ops <= set(_LAYOUT_OPS) and ops & set(SPLIT_OPS):
        return Message.of(
            N_(
                "splits one tensor into parts along a dimension (a fused projection into its halves): no value is "
                "changed; the values row is the first part's"
            )
        )
    if ops and ops <= set(_LAYOUT_OPS):
        return Message.of(N_("a change of layout (view, reshape, transpose): the values are not changed"))
    if _multiplies_two(step):
        return Message.of(N_("multiplies two tensors elementwise: one scales the other, value by value (a gate)"))
    if "add" in ops and len(step.inputs_from) >= 2:
        return Message.of(N_("adds two tensors: a residual connection, or the sum of two branches"))
    return None


def _variant_step(result: TraceResult, step: TraceStep) -> str | None:
    """The step's name in its variant's forward (`ffn.up_proj` in a block is `up_proj`)."""
    if result.spec is None:
        return None
    return step.region if result.block is None or step.part == "ffn" else None


def step_explanation(result: TraceResult, step: TraceStep) -> Message | None:
    """Why this step is there: its variant's words where it has some, else what kind of step it is."""
    name = _variant_step(result, step)
    if name is not None and result.spec is not None:
        owned = result.spec.info.step_explanation(result.spec, name)
        if owned is not None:
            return owned
    return _generic(result, step)


def _shown_steps(result: TraceResult) -> Sequence[tuple[int, TraceStep]]:
    """(number, step) of the steps the steps table shows; elided experts are summarised there."""
    summary = summarise_experts(result.steps)
    return [(n, s) for n, s in enumerate(result.steps, 1) if summary is None or not summary.is_elided(n - 1)]


def explain_table(result: TraceResult) -> FitTable | None:
    """One row per step: its number, its name, and why it is there (wrapping to the width)."""
    rows: list[Any] = []
    for n, step in _shown_steps(result):
        why = step_explanation(result, step)
        if why is not None:
            rows.append([Text(str(n)), Text(step.name), Text(why.shown(), style="dim")])
    if not rows:
        return None
    columns = [Col("#"), Col(_("step"), "fixed"), Col(_("why it is there"), "text")]
    return FitTable(_("Why each step is there"), columns, rows)


def backward_explanation(step: BackwardStep) -> Message:
    """What a backward step computes, by what autograd ran in it."""
    if step.recompute:
        return Message.of(N_("runs {step} forward again, from the checkpoint's input, for the backward steps to read"), step=step.of)
    if sum(len(w.shape) >= 2 for w in step.weight_grads) >= 2:  # a whole expert, a block's FFN
        return Message.of(
            N_(
                "the backward of {step}, a module of several layers, as one step: "
                "each layer's weight gradient dW = dyᵀ·x and input gradient dx = dy·W, last layer first, through what lies between"
            ),
            step=step.of,
        )
    if step.weight_grads and step.input_grad_flops:
        return Message.of(
            N_(
                "the gradient of {step}'s weights, dW = dyᵀ·x, and of its input, dx = dy·W, "
                "handed back to what fed it (a step, or the input)"
            ),
            step=step.of,
        )
    if step.weight_grads and not step.matmul_flops:  # a norm's scale, a learned per-feature factor
        return Message.of(
            N_("the gradient of {step}'s per-feature weights (dy times what each one multiplied, summed over the tokens) and of its input"),
            step=step.of,
        )
    if step.weight_grads:
        return Message.of(N_("the gradient of {step}'s weights, dW = dyᵀ·x"), step=step.of)
    if step.input_grad_flops:
        return Message.of(N_("the gradient through a product of two activations: each one's is dy times the other"))
    ops = {op_base(op) for op in step.aten_ops}
    arithmetic = ops - set(_LAYOUT_OPS) - _GRAD_COPY_OPS - _PLACING_OPS
    adds_reads = len(step.inputs_from) >= 2 and "add" in arithmetic  # the engine's sum of one tensor's gradients
    if step.elementwise_flops and arithmetic == {"add"} and len(step.inputs_from) >= 2 and not ops & _PLACING_OPS:
        return Message.of(
            N_(
                "adds the gradients {step} hand back: "
                "they read one tensor, and a tensor read by several steps gets the sum of their gradients"
            ),
            step=step.of,
        )
    if ops & _PLACING_OPS and arithmetic <= {"add"}:
        if adds_reads:
            return Message.of(
                N_(
                    "puts the gradient of what {step} picked back where it was picked from, "
                    "and adds what earlier steps handed back for the same tensor"
                ),
                step=step.of,
            )
        return Message.of(
            N_("puts the gradient of what {step} picked back where it was picked from, zeros elsewhere: no arithmetic"), step=step.of
        )
    if step.elementwise_flops and arithmetic - {"add"} == {"mul", "sum"} and ops & _PLACING_OPS:
        return Message.of(
            N_(
                "the gradient through the weighted sum {step}: "
                "each term's is dy times its weight, each weight's is dy times its term, summed"
            ),
            step=step.of,
        )
    if step.elementwise_flops and arithmetic == {"mul"} and len(step.reads) >= 2:
        return Message.of(
            N_("the gradient through the product {step}: each factor's is dy times the other factor, element by element"), step=step.of
        )
    if step.elementwise_flops and arithmetic & _ROW_OPS:
        return Message.of(
            N_(
                "the gradient through {step}, row by row: "
                "each output depends on its whole row, so each input's gradient sums dy times a derivative over the row"
            ),
            step=step.of,
        )
    if step.elementwise_flops:
        return Message.of(N_("the gradient through {step}, element by element: dy times the step's own derivative"), step=step.of)
    return Message.of(N_("hands the gradient on through {step}, with no arithmetic of its own"), step=step.of)
