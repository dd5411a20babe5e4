"""`soft_moe`: the dense mixture, every expert on every token, softmax-weighted (Jacobs 1991)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.i18n import N_, Message
from ffn_cli.variants.base import FlopStep, SavedTensor, Weights, Width
from ffn_cli.variants.mixture import MixtureVariant

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["SoftMoE"]


class SoftMoE(MixtureVariant):
    name = "soft_moe"
    formula = "Σ_{i=1..E} g_i·expert_i(x),  g = softmax(W_router·x)"
    origin = "Jacobs et al. 1991, Adaptive Mixtures of Local Experts"
    summary = "dense mixture: every expert runs, softmax-weighted"
    torch_module = "ffn_cli.modules.mixture:SoftMoEFFN"
    step_order = ("flatten", "router", "softmax", "experts", "combine", "unflatten")

    def active_experts(self, spec: FFNShape) -> int:
        return spec.experts

    def header_formula(self, spec: FFNShape) -> str:
        return self.formula

    def flop_steps(self, spec: FFNShape) -> list[FlopStep]:
        return self.router_steps(spec) + self.expert_steps(spec)

    def saved_tensors(self, spec: FFNShape) -> list[SavedTensor]:
        """Every expert reads the tokens themselves (x, kept once) and its output is kept by
        the weighting multiply, beside the gate column it multiplies by."""
        e, d = spec.experts, spec.d_model
        kept = [*self.saved_router(spec), SavedTensor("gates in the run's dtype", e, Width.CAST)]
        expert = self.expert(spec).saved(spec, spec.hidden)
        kept += [SavedTensor(f"experts: {s.name}", e * s.per_token, s.width, e * s.fixed) for s in expert if s.name != "x"]
        return [*kept, SavedTensor("expert outputs", e * d)]

    def step_formula(self, spec: FFNShape, step: str) -> str:
        return {"combine": "Σ_E g_e·expert_e(x)"}.get(step) or super().step_formula(spec, step)

    def step_explanation(self, spec: FFNShape, step: str) -> Message | None:
        if step == "combine":
            text = N_("every expert's output weighted by its g and summed: all {experts} experts ran on every token")
            return Message.of(text, experts=spec.experts)
        return super().step_explanation(spec, step)

    def forward(self, spec: FFNShape, w: Weights, x: Any) -> Any:
        """Every expert on every token, weighted by a softmax gate (in the run's dtype)."""
        from ffn_cli.variants import routing as r

        tokens = w.step("flatten", r.flatten, x)  # (N, d)
        gates = w.step("softmax", r.soft_gates, w.linear("router", tokens), tokens.dtype)  # (N, E)
        out = w.step("combine", r.zeros_like, tokens)
        for e in range(spec.experts):
            expert_out = w.call(f"experts.{e}", tokens)  # (N, d)
            out = w.step("combine", r.add_column, out, gates, e, expert_out)
        return w.step("unflatten", r.unflatten, out, x.shape)
