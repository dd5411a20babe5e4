"""`swiglu_clamp`: gpt-oss's clamped SwiGLU (OpenAI 2025).

gate ← min(gate, 7), up ← clip(up, −7, 7), h = (up + 1) ⊙ gate·σ(1.702·gate): a sharper
sigmoid (α = 1.702, the GELU-matching slope), a +1 on the linear branch, and clamps that keep
bf16 activations bounded. gpt-oss stores gate and up interleaved in one fused weight; here
they are separate (or fused gate rows first, as every gated variant), which changes no count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.i18n import N_, Message
from ffn_cli.variants.activations import Activation
from ffn_cli.variants.base import FlopStep, SavedTensor, Weights
from ffn_cli.variants.gated import GatedVariant

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["SwiGLUClamp"]

ALPHA = 1.702
LIMIT = 7.0
SWISH_ALPHA = Activation("swish_1.702", "z·σ(1.702·z)", 6, "relu", saves_input=True)  # mul, sigmoid (4), mul


def _clamp(gate: Any, up: Any) -> tuple[Any, Any]:
    return gate.clamp(max=LIMIT), up.clamp(min=-LIMIT, max=LIMIT)


def _swish(gate: Any) -> Any:
    return gate * (gate * ALPHA).sigmoid()


def _plus_one_times(up: Any, glu: Any) -> Any:
    return (up + 1) * glu


class SwiGLUClamp(GatedVariant):
    name = "swiglu_clamp"
    activation = SWISH_ALPHA.name
    formula = "W_down·((clip(W_up·x) + 1) ⊙ g·σ(1.702·g)),  g = min(W_gate·x, 7)"
    origin = "gpt-oss (OpenAI 2025)"
    summary = "gpt-oss's clamped SwiGLU, α 1.702, limit 7"
    default_bias = True  # gpt-oss's experts carry biases

    def act(self) -> Activation:
        return SWISH_ALPHA

    def combine(self, spec: FFNShape, w: Weights, gate: Any, up: Any) -> Any:
        gate, up = w.step("clamp", _clamp, gate, up)
        glu = w.step("activation", _swish, gate)
        return w.step("multiply", _plus_one_times, up, glu)

    def combine_steps(self, spec: FFNShape, d_ff: int, prefix: str) -> list[FlopStep]:
        # Clamps are comparisons: 0 FLOPs by our convention.
        return [
            FlopStep(prefix + "clamp", 0, 0, "min(gate, 7), clip(up, ±7)"),
            FlopStep(prefix + "activation", 0, SWISH_ALPHA.flops_per_element * d_ff, "gate·σ(1.702·gate)"),
            FlopStep(prefix + "multiply", 0, 2 * d_ff, "(up + 1) ⊙ glu"),
        ]

    def saved(self, spec: FFNShape, d_ff: int) -> list[SavedTensor]:
        """Both clamps keep their inputs; the swish keeps the clamped gate and its sigmoid;
        the multiply keeps up + 1 and the swish; down_proj keeps their product."""
        names = ("gate", "up", "clamped gate", "σ(1.702·gate)", "up + 1", "swish(gate)", "h")
        return [SavedTensor("x", spec.d_model), *(SavedTensor(n, d_ff) for n in names)]

    def step_formula(self, spec: FFNShape, step: str) -> str:
        return {
            "clamp": "g ← min(g, 7), u ← clip(u, −7, 7)",
            "activation": "g·σ(1.702·g)",
            "multiply": "h = (u + 1) ⊙ g·σ(1.702·g)",
        }.get(step) or super().step_formula(spec, step)

    def step_explanation(self, spec: FFNShape, step: str) -> Message | None:
        if step == "clamp":
            text = N_("clamps the gate to at most {limit} and up to ±{limit}, so bf16 activations stay bounded")
            return Message.of(text, limit=f"{LIMIT:g}")
        return super().step_explanation(spec, step)

    def tp_step_formula(self, spec: FFNShape, step: str, down_bias: bool) -> str | None:
        if step == "activation":
            return "gate·σ(1.702·gate)"
        if step == "multiply":
            return "(up + 1) ⊙ glu"
        return super().tp_step_formula(spec, step, down_bias)
