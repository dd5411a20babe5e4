"""The gated (GLU) family: down_proj(act(gate_proj(x)) ⊙ up_proj(x)), Shazeer 2020.

The fused layout keeps gate and up in one `gate_up_proj` weight, gate rows first (as Phi-3).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ffn_cli.i18n import N_, Message
from ffn_cli.variants.base import DOWN_PROJ, Family, FlopStep, SavedTensor, SplitKind, Weights
from ffn_cli.variants.single import LinearSpec, SingleFFN
from ffn_cli.variants.table import VARIANTS

if TYPE_CHECKING:
    from ffn_cli.variants.base import Variant
    from ffn_cli.variants.shape import FFNShape

__all__ = ["GLU_FORMULA", "GLU_ORIGIN", "GatedVariant", "llama_hidden_dim"]

GLU_ORIGIN = "Shazeer 2020, GLU Variants Improve Transformer"
GLU_FORMULA = "W_down·({act}(W_gate·x) ⊙ W_up·x)"


def llama_hidden_dim(d_model: int, multiple_of: int = 256, ffn_dim_multiplier: float | None = None) -> int:
    """LLaMA's SwiGLU sizing: int(2·4d/3), times the multiplier, rounded UP to multiple_of.

    d_model 4096 → 11008; with multiplier 1.3 and multiple_of 1024 → 14336 (Llama 3 8B).
    """
    hidden = int(2 * 4 * d_model / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * math.ceil(hidden / multiple_of)


def _chunk2(t: Any) -> Any:
    return t.chunk(2, dim=-1)  # gate rows come first


def _mul(a: Any, b: Any) -> Any:
    return a * b


class GatedVariant(SingleFFN):
    """act(gate) ⊙ up; subclasses pick the activation, or override `combine`."""

    family = Family.GATED
    default_bias = False
    d_ff_rule = "int(2·4d/3) × ffn_dim_multiplier, rounded up to multiple_of"
    d_ff_rule_short = N_("⅔·4d ↑ multiple_of")
    own_options = frozenset({"fused_gate_up", "multiple_of", "ffn_dim_multiplier"})

    def default_d_ff(self, d_model: int, multiple_of: int, ffn_dim_multiplier: float | None) -> int:
        return llama_hidden_dim(d_model, multiple_of, ffn_dim_multiplier)

    def linears(self, spec: FFNShape) -> tuple[LinearSpec, ...]:
        down = LinearSpec(DOWN_PROJ, "d", "f", SplitKind.ROW, SplitKind.REPLICATED)
        if spec.fused_gate_up:
            return (LinearSpec("gate_up_proj", "2f", "d", SplitKind.PAIRED, SplitKind.PAIRED, feeds_activation=True), down)
        return (
            LinearSpec("gate_proj", "f", "d", SplitKind.COLUMN, SplitKind.COLUMN, feeds_activation=True),
            LinearSpec("up_proj", "f", "d", SplitKind.COLUMN, SplitKind.COLUMN),
            down,
        )

    def matmul_per_token(self) -> str:
        return "6·d·d_ff"

    # --- forward ------------------------------------------------------------------------------

    def forward(self, spec: FFNShape, w: Weights, x: Any) -> Any:
        if spec.fused_gate_up:
            gate, up = w.step("split", _chunk2, w.linear("gate_up_proj", x))  # (…, d_ff) each
        else:
            gate, up = w.linear("gate_proj", x), w.linear("up_proj", x)  # (…, d_ff) each
        h = self.combine(spec, w, gate, up)  # (…, d_ff)
        return w.linear("down_proj", w.dropout(h))  # (…, d)

    def combine(self, spec: FFNShape, w: Weights, gate: Any, up: Any) -> Any:
        activated = w.step("activation", self.act().torch, gate)
        return w.step("multiply", _mul, activated, up)

    # --- accounting ---------------------------------------------------------------------------

    def steps(self, spec: FFNShape, d_ff: int, prefix: str = "") -> list[FlopStep]:
        d, f, b = spec.d_model, d_ff, 1 if spec.bias else 0
        if spec.fused_gate_up:
            steps = [FlopStep(prefix + "gate_up_proj", 4 * d * f, 2 * f * b, "x·W_gate_upᵀ")]
        else:
            steps = [
                FlopStep(prefix + "gate_proj", 2 * d * f, f * b, "x·W_gateᵀ"),
                FlopStep(prefix + "up_proj", 2 * d * f, f * b, "x·W_upᵀ"),
            ]
        steps += self.combine_steps(spec, f, prefix)
        steps.append(FlopStep(prefix + "down_proj", 2 * d * f, d * b, "h·W_downᵀ" + (" + b_down" if b else "")))
        return steps

    def combine_steps(self, spec: FFNShape, d_ff: int, prefix: str) -> list[FlopStep]:
        act = self.act()
        return [
            FlopStep(prefix + "activation", 0, act.flops_per_element * d_ff, f"{act.name}(gate)"),
            FlopStep(prefix + "multiply", 0, d_ff, f"{act.name}(gate) ⊙ up"),
        ]

    def saved(self, spec: FFNShape, d_ff: int) -> list[SavedTensor]:
        """x, up and the activated gate (the multiply's operands), their product (down_proj's
        input), and the gate before the activation when its backward needs it."""
        kept = [SavedTensor("x", spec.d_model), SavedTensor("up", d_ff), SavedTensor("act(gate)", d_ff), SavedTensor("h", d_ff)]
        if self.act().saves_input:
            kept.append(SavedTensor("gate", d_ff))
        return kept

    # --- labels -------------------------------------------------------------------------------

    def step_formula(self, spec: FFNShape, step: str) -> str:
        act, b = self.act(), " + b" if spec.bias else ""
        gate = "g" if not act.runs_an_op else f"{act.name}(g)"
        return {
            "gate_proj": f"x·W_gateᵀ{b}",
            "up_proj": f"x·W_upᵀ{b}",
            "gate_up_proj": f"x·W_gate_upᵀ{b}",
            "down_proj": f"h·W_downᵀ{b}",
            "dropout": f"dropout(h), p = {spec.dropout:g}",
            "split": N_("chunk into gate g, up u"),
            "multiply": f"h = {gate} ⊙ u",
            "activation": f"{act.name}(g) = {act.formula.replace('z', 'g')}",
        }.get(step, step)

    def step_explanation(self, spec: FFNShape, step: str) -> Message | None:
        d, f = spec.d_model, spec.hidden
        texts = {
            "gate_proj": N_(
                "the gate's projection, d_model {d_model} → d_ff {d_ff}: once activated, it decides how much of each hidden unit passes"
            ),
            "up_proj": N_("the up-projection: widens each token from d_model {d_model} to d_ff {d_ff}, the values the gate lets through"),
            "gate_up_proj": N_(
                "the gate and up projections as one matmul, d_model {d_model} → 2·d_ff {width}: one larger matrix multiply instead of two"
            ),
            "split": N_("cuts the fused output into its gate and up halves, d_ff {d_ff} each: views, nothing is copied"),
            "multiply": N_(
                "the gating: multiplies the gate and the up-projection elementwise, so each hidden unit passes in proportion to its gate"
            ),
        }
        if step == "activation":
            return Message.of(
                N_(
                    "{act} on the gate, the activation function. Without it this FFN would be the {bilinear} one, "
                    "h = g ⊙ u: still not linear (a product of two projections of x), but with no {act} to shape the gate"
                ),
                act=self.act().name,
                bilinear=self._without_activation().name,
            )
        if step in texts:
            return Message.of(texts[step], d_model=d, d_ff=f, width=2 * f)
        return super().step_explanation(spec, step)

    @staticmethod
    def _without_activation() -> Variant:
        """The registry's gated variant whose gate has no activation: what this one is without its own."""
        return next(v for v in VARIANTS.values() if isinstance(v, GatedVariant) and not v.act().runs_an_op)

    def tp_step_formula(self, spec: FFNShape, step: str, down_bias: bool) -> str | None:
        act = self.act().name
        return {
            "gate_up_proj": "x·W_gate_up[r]ᵀ",
            "gate_proj": "x·W_gate[r]ᵀ",
            "up_proj": "x·W_up[r]ᵀ",
            "activation": f"{act}(gate)",
            "multiply": f"{act}(gate) ⊙ up",
            "down_proj": Message.join("h[r]·W_down[:, r]ᵀ", " + b_down" if down_bias and spec.bias else Message(N_(" (partial sum)"))),
        }.get(step)
