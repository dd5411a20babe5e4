"""One feed-forward network (not a mixture): the base of the dense, gated and sparse families.

A subclass declares its linears and any other state; from those this class derives the
parameter list, the torch module and the accounting. The forward is written once, against
`Weights`, so the built module and a tensor-parallel shard run the same code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ffn_cli.i18n import N_, Message
from ffn_cli.variants.activations import ACTIVATIONS, Activation
from ffn_cli.variants.base import FlopStep, ParamTensor, SavedTensor, SplitKind, TensorTemplate, Variant, Weights, linear_templates

if TYPE_CHECKING:
    from torch import nn

    from ffn_cli.variants.shape import FFNShape

__all__ = ["LinearSpec", "SingleFFN"]


@dataclass(frozen=True)
class LinearSpec:
    """One nn.Linear of a layout: its name, (out, in) dims as symbols, and how TP splits it."""

    name: str
    out_dim: str
    in_dim: str
    weight_split: SplitKind
    bias_split: SplitKind
    feeds_activation: bool = False  # init gives it the activation's gain


class SingleFFN(Variant):
    """What dense, gated and sparse variants share."""

    torch_module = "ffn_cli.modules.ffn:FFN"

    def act(self) -> Activation:
        return ACTIVATIONS[self.activation]

    def model_words(self, spec: FFNShape) -> tuple[str, list[str]]:
        words: list[str] = [Message.of(N_(", d_ff {d_ff}"), d_ff=f"{spec.hidden:,}")]
        if spec.bias:
            words.append(Message.of(N_(", biases")))
        if spec.fused_gate_up:
            words.append(Message.of(N_(", fused gate_up")))
        return self.name, words

    # --- layout ---------------------------------------------------------------------------

    def header_formula(self, spec: FFNShape) -> str:
        """The formula with a bias term for each projection exactly when the spec has biases."""
        return with_biases(self.formula, bool(spec.bias))

    def linears(self, spec: FFNShape) -> tuple[LinearSpec, ...]:
        raise NotImplementedError

    def extra_templates(self, spec: FFNShape) -> tuple[TensorTemplate, ...]:
        """Parameters beyond the linears (a learnable activation's scalars)."""
        return ()

    def layout(self, spec: FFNShape) -> tuple[TensorTemplate, ...]:
        out: tuple[TensorTemplate, ...] = ()
        for lin in self.linears(spec):
            out += linear_templates(lin.name, lin.out_dim, lin.in_dim, lin.weight_split, lin.bias_split)
        return out + self.extra_templates(spec)

    def tensors(self, spec: FFNShape, d_ff: int, prefix: str = "") -> list[ParamTensor]:
        """Every parameter of one FFN of width d_ff, named as the module names it."""
        dims = {"d": spec.d_model, "f": d_ff, "2f": 2 * d_ff}
        return [ParamTensor(prefix + t.name, t.shape(dims)) for t in self.layout(spec) if spec.bias or not t.is_bias]

    def param_tensors(self, spec: FFNShape) -> list[ParamTensor]:
        return self.tensors(spec, spec.hidden)

    def tp_split(self, spec: FFNShape, name: str) -> SplitKind:
        """How tensor parallelism cuts the parameter or buffer `name` (unprefixed)."""
        for t in self.layout(spec):
            if t.name == name:
                return t.split
        for buffer, split in self.buffers(spec):
            if buffer == name:
                return split
        raise KeyError(name)

    def shard_split(self, spec: FFNShape, name: str) -> tuple[SplitKind, int | None]:
        """Tensor parallelism's cut: one FFN has no experts."""
        return self.tp_split(spec, name), None

    def buffers(self, spec: FFNShape) -> tuple[tuple[str, SplitKind], ...]:
        """Non-parameter state the forward reads (the sparse mask), and how TP cuts it."""
        return ()

    def register_state(self, module: nn.Module, spec: FFNShape, d_ff: int) -> None:
        """Register on the built `module` (one FFN of width d_ff) the parameters and buffers
        beyond its linears that the forward reads with `w.tensor(name)`: those of
        `extra_templates` and `buffers`. Most variants have none; one that has imports torch
        here, where it runs, so the registry still loads without it."""

    # --- accounting ---------------------------------------------------------------------------

    def steps(self, spec: FFNShape, d_ff: int, prefix: str = "") -> list[FlopStep]:
        raise NotImplementedError

    def flop_steps(self, spec: FFNShape) -> list[FlopStep]:
        return self.steps(spec, spec.hidden)

    def saved(self, spec: FFNShape, d_ff: int) -> list[SavedTensor]:
        raise NotImplementedError

    def saved_tensors(self, spec: FFNShape) -> list[SavedTensor]:
        return self.saved(spec, spec.hidden)

    def matmul_per_token(self) -> str:
        """The closed form of one FFN's matmul FLOPs per token, in d and d_ff."""
        raise NotImplementedError

    def matmul_flops_formula(self, spec: FFNShape) -> str:
        return self.matmul_per_token()

    def param_formula(self, spec: FFNShape) -> str:
        """The closed form of the count, derived from the layout: each template's dims multiplied."""
        terms: dict[str, int] = {}
        for t in self.layout(spec):
            if t.is_bias and not spec.bias:
                continue
            factor = 1
            symbols: list[str] = []
            for s in t.dims:
                if s == "2f":
                    factor, symbols = factor * 2, [*symbols, "d_ff"]
                elif s in ("d", "f"):
                    symbols.append("d" if s == "d" else "d_ff")
                else:
                    factor *= int(s)
            key = "·".join(sorted(symbols, key=lambda x: x != "d")) or "1"
            terms[key] = terms.get(key, 0) + factor
        rank = {"d·d_ff": 0, "d_ff": 1, "d": 2, "1": 3}
        order = sorted(terms, key=lambda k: rank.get(k, 0))
        return " + ".join(_term(terms[k], k) for k in order)

    # --- torch --------------------------------------------------------------------------------

    def forward(self, spec: FFNShape, w: Weights, x: Any) -> Any:
        raise NotImplementedError

    def tp_step_formula(self, spec: FFNShape, step: str, down_bias: bool) -> str | None:
        """The formula a tensor-parallel rank logs for `step`; None: not logged."""
        return None

    # --- why each step is there -----------------------------------------------------------------

    def step_explanation(self, spec: FFNShape, step: str) -> Message | None:
        """What every single FFN shares: the activation, dropout and the way back to d_model."""
        d, f = spec.d_model, spec.hidden
        if step == "activation":
            text = N_(
                "{act}, the activation function: the nonlinearity. Without it the two linear layers would collapse "
                "into one, (xW₁)W₂ = x(W₁W₂), and the FFN could learn nothing a single matrix cannot"
            )
            return Message.of(text, act=self.act().name)
        if step == "dropout":
            text = N_(
                "regularisation, p = {p}: the identity in eval mode; in train mode it zeroes each value with "
                "probability p and scales the rest by 1/(1−p), so the expected value stays the same"
            )
            return Message.of(text, p=f"{spec.dropout:g}")
        if step == "down_proj":
            text = N_(
                "the down-projection: narrows each token back from d_ff {d_ff} to d_model {d_model}, "
                "so the residual connection can add the FFN's output to its input"
            )
            return Message.of(text, d_ff=f, d_model=d)
        return None


def _term(count: int, symbols: str) -> str:
    if symbols == "1":
        return str(count)
    return symbols if count == 1 else f"{count}·{symbols}"


def with_biases(formula: str, bias: bool) -> str:
    """`formula` with `+ b_name` beside every `W_name·x` and after `W_down·…`, or with none.

    A projection that is a function's whole argument gets its bias inside the call
    (`silu(W_gate·x + b_gate)`); elsewhere it is bracketed (`⊙ (W_up·x + b_up)`).
    """
    bare = re.sub(r" \+ b_\w+", "", formula)
    if not bias:
        return bare
    body, _, rest = bare.partition(",  ")
    body = re.sub(r"(?<=\()W_(\w+)·x(?=[),])", r"W_\1·x + b_\1", body)
    body = re.sub(r"W_(\w+)·x(?![\w ]\+|\w)", r"(W_\1·x + b_\1)", body)
    rest = re.sub(r"(?<=\()W_(\w+)·x(?=[),])", r"W_\1·x + b_\1", rest)
    body += " + b_down"
    return f"{body},  {rest}" if rest else body
