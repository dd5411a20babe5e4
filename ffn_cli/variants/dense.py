"""The dense family: up_proj → activation → dropout → down_proj, the original Transformer FFN."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.i18n import N_, Message
from ffn_cli.variants.base import DOWN_PROJ, Family, FlopStep, SavedTensor, SplitKind, Weights
from ffn_cli.variants.single import LinearSpec, SingleFFN

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["DenseVariant"]

COLUMN, ROW, REPLICATED = SplitKind.COLUMN, SplitKind.ROW, SplitKind.REPLICATED


class DenseVariant(SingleFFN):
    """W_down·act(W_up·x + b_up) + b_down; subclasses pick the activation."""

    family = Family.DENSE
    default_bias = True

    def linears(self, spec: FFNShape) -> tuple[LinearSpec, ...]:
        return (
            LinearSpec("up_proj", "f", "d", COLUMN, COLUMN, feeds_activation=True),
            LinearSpec(DOWN_PROJ, "d", "f", ROW, REPLICATED),  # b_down: added once, after the all-reduce
        )

    def matmul_per_token(self) -> str:
        return "4·d·d_ff"

    # --- forward ------------------------------------------------------------------------------

    def forward(self, spec: FFNShape, w: Weights, x: Any) -> Any:
        # No name for up_proj's output: a plain forward frees it once the activation has read it.
        h = self.activate(spec, w, w.linear("up_proj", x))  # (…, d_ff)
        return w.linear("down_proj", w.dropout(h))  # (…, d)

    def activate(self, spec: FFNShape, w: Weights, pre: Any) -> Any:
        return w.step("activation", self.act().torch, pre)

    # --- accounting ---------------------------------------------------------------------------

    def steps(self, spec: FFNShape, d_ff: int, prefix: str = "") -> list[FlopStep]:
        d, f, b = spec.d_model, d_ff, 1 if spec.bias else 0
        return [
            FlopStep(prefix + "up_proj", 2 * d * f, f * b, "x·W_upᵀ" + (" + b_up" if b else "")),
            *self.activation_steps(spec, f, prefix),
            FlopStep(prefix + "down_proj", 2 * d * f, d * b, "h·W_downᵀ" + (" + b_down" if b else "")),
        ]

    def activation_steps(self, spec: FFNShape, d_ff: int, prefix: str) -> list[FlopStep]:
        act = self.act()
        return [FlopStep(prefix + "activation", 0, act.flops_per_element * d_ff, f"{act.name}(h)")]

    def saved(self, spec: FFNShape, d_ff: int) -> list[SavedTensor]:
        """x (up_proj's input), h (down_proj's input, also relu's output), and the
        pre-activation when the activation's backward needs its input."""
        kept = [SavedTensor("x", spec.d_model), SavedTensor("h", d_ff)]
        if self.act().saves_input:
            kept.append(SavedTensor("pre-activation", d_ff))
        return kept

    # --- labels -------------------------------------------------------------------------------

    def step_formula(self, spec: FFNShape, step: str) -> str:
        act, b = self.act(), bool(spec.bias)
        return {
            "up_proj": "x·W_upᵀ" + (" + b_up" if b else ""),
            "down_proj": "h·W_downᵀ" + (" + b_down" if b else ""),
            "dropout": f"dropout(h), p = {spec.dropout:g}",
            "activation": f"{act.name}(h) = {act.formula.replace('z', 'h')}",
        }.get(step, step)

    def step_explanation(self, spec: FFNShape, step: str) -> Message | None:
        if step == "up_proj":
            d, f = spec.d_model, spec.hidden
            text = N_(
                "the up-projection: widens each token from d_model {d_model} to d_ff {d_ff} ({ratio}×), "
                "a wider space in which the activation can pull features apart"
            )
            return Message.of(text, d_model=d, d_ff=f, ratio=f"{f / d:.3g}")
        return super().step_explanation(spec, step)

    def tp_step_formula(self, spec: FFNShape, step: str, down_bias: bool) -> str | None:
        return {
            "up_proj": "x·W_up[r]ᵀ" + (" + b_up[r]" if spec.bias else ""),
            "activation": f"{self.act().name}(h)",
            "down_proj": Message.join("h[r]·W_down[:, r]ᵀ", " + b_down" if down_bias and spec.bias else Message(N_(" (partial sum)"))),
        }.get(step)
