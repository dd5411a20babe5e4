"""`moe`: top-k routed experts, with optional shared experts (Shazeer 2017, Mixtral, DeepSeek-MoE)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.variants.base import FlopStep, ParamTensor, SavedTensor, Width
from ffn_cli.variants.mixture import MixtureVariant

if TYPE_CHECKING:
    from ffn_cli.spec import FFNSpec

__all__ = ["RoutedMoE"]


class RoutedMoE(MixtureVariant):
    name = "moe"
    formula = "Σ_{i∈top-k} ĝ_i·expert_i(x) + shared(x),  g = softmax(W_router·x)"
    origin = "Shazeer et al. 2017; Switch (Fedus et al. 2021, k=1); Mixtral 2024; DeepSeek-MoE 2024"
    summary = "top-k routed experts with optional shared experts"
    is_routed = True
    step_order = (
        "flatten",
        "router",
        "softmax",
        "top_k",
        "renormalise",
        "dispatch",
        "experts",
        "combine",
        "shared_experts",
        "shared_expert_gate",
        "shared_add",
        "unflatten",
    )

    def active_experts(self, spec: FFNSpec) -> int:
        return spec.top_k

    def shared_hidden(self, spec: FFNSpec) -> int:
        return spec.shared_experts * (spec.shared_d_ff or spec.hidden)

    def header_parts(self, spec: FFNSpec) -> list[str]:
        parts = [*super().header_parts(spec), f"top-{spec.top_k}" + (" renormalised" if spec.normalize_top_k else "")]
        if spec.shared_experts:
            parts.append(f"{spec.shared_experts} shared")
        if spec.capacity_factor is not None:
            parts.append(f"capacity factor {spec.capacity_factor:g}")
        return parts

    def header_formula(self, spec: FFNSpec) -> str:
        """The formula with the shared term only when there are shared experts."""
        return self.formula if self.shared_hidden(spec) else self.formula.replace(" + shared(x)", "")

    # --- layout -------------------------------------------------------------------------------

    def param_tensors(self, spec: FFNSpec) -> list[ParamTensor]:
        tensors = super().param_tensors(spec)
        shared = self.shared_hidden(spec)
        if shared:
            tensors += self.expert(spec).tensors(spec, shared, "shared_experts.")
            if spec.shared_expert_gate:
                tensors.append(ParamTensor("shared_expert_gate.weight", (1, spec.d_model)))
        return tensors

    def active_params(self, spec: FFNSpec) -> int:
        """The router, k experts and the shared ones: what one token touches."""
        one = sum(t.count for t in self.expert(spec).tensors(spec, spec.hidden))
        return sum(t.count for t in self.param_tensors(spec)) - (spec.experts - spec.top_k) * one

    def param_formula(self, spec: FFNSpec) -> str:
        one = self.expert(spec).param_formula(spec)
        text = f"E·d + E·({one})"
        if self.shared_hidden(spec):
            text += " + shared(" + one.replace("d_ff", "d_sh") + ")"
            if spec.shared_expert_gate:
                text += " + d"
        return text

    def matmul_flops_formula(self, spec: FFNSpec) -> str:
        one = self.expert(spec).matmul_per_token()
        text = f"2·d·E + k·{one}"
        if self.shared_hidden(spec):
            text += " + " + one.replace("d_ff", "d_sh") + (" + 2·d" if spec.shared_expert_gate else "")
        return text

    # --- accounting ---------------------------------------------------------------------------

    def flop_steps(self, spec: FFNSpec) -> list[FlopStep]:
        d, k = spec.d_model, spec.top_k
        steps = self.router_steps(spec)
        if spec.normalize_top_k:
            steps.append(FlopStep("renormalise", 0, 2 * k, "top-k weights / their sum"))
        steps += self.expert_steps(spec)
        shared = self.shared_hidden(spec)
        if shared:
            steps += self.expert(spec).steps(spec, shared, "shared_experts.")
            if spec.shared_expert_gate:
                steps.append(FlopStep("shared_expert_gate", 2 * d, 4 + 2 * d, "σ(x·w_g)·shared + routed"))
            else:
                steps.append(FlopStep("shared_add", 0, d, "shared + routed"))
        return steps

    def saved_tensors(self, spec: FFNSpec) -> list[SavedTensor]:
        """Without capacity drops every token reaches k experts, whatever the routing, so the
        per-expert tensors sum to k per token: each expert's own, its output and gate weight
        (kept by the weighting multiply), the weighted output (kept by index_add), and the
        int64 token and slot indices of its rows (one storage: torch.where's columns)."""
        d, k = spec.d_model, spec.top_k
        kept = [*self.saved_router(spec), SavedTensor("top-k indices", k, Width.INDEX)]
        if spec.normalize_top_k:
            kept += [SavedTensor("top-k weights", k, Width.GATE), SavedTensor("their sum", 1, Width.GATE)]
        kept += self.saved_expert_path(spec)
        kept += [
            SavedTensor("expert outputs", k * d),
            SavedTensor("gate weight per row", k),
            SavedTensor("weighted outputs (index_add keeps its source)", k * d),
            SavedTensor("token and slot indices", 2 * k, Width.INDEX),
        ]
        shared = self.shared_hidden(spec)
        if shared:
            # The shared experts read the same tokens as the router: x is kept once.
            kept += [
                SavedTensor(f"shared: {s.name}", s.per_token, s.width, s.fixed)
                for s in self.expert(spec).saved(spec, shared)
                if s.name != "x"
            ]
            if spec.shared_expert_gate:
                kept += [SavedTensor("σ(shared gate)", 1), SavedTensor("shared output", d)]
        return kept

    # --- labels -------------------------------------------------------------------------------

    def step_formula(self, spec: FFNSpec, step: str) -> str:
        return {
            "top_k": f"top-{spec.top_k} of E by g",
            "renormalise": "ĝ = g / Σ_top-k g",
            "combine": "Σ_k ĝ_k·expert_k(x)",
            "shared_add": "routed + shared",
            "shared_expert_gate": "σ(x·w_g)·shared + routed",
        }.get(step) or super().step_formula(spec, step)

    # --- torch and NumPy ----------------------------------------------------------------------

    def build(self, spec: FFNSpec) -> Any:
        from ffn_cli.modules.mixture import MoEFFN

        return MoEFFN(spec, self)

    def numpy_forward(self, spec: FFNSpec, weights: dict[str, Any], x: Any) -> Any:
        import math

        import numpy as np

        from ffn_cli.variants.numpy_ops import linear, sigmoid, softmax

        expert = self.expert(spec)
        probs = softmax(linear(x, weights, "router"))  # (N, E)
        chosen = np.argsort(-probs, axis=-1, kind="stable")[:, : spec.top_k]  # (N, k)
        gates = np.take_along_axis(probs, chosen, axis=-1)
        if spec.normalize_top_k:
            gates = gates / gates.sum(axis=-1, keepdims=True)
        capacity = None if spec.capacity_factor is None else math.ceil(spec.capacity_factor * x.shape[0] * spec.top_k / spec.experts)
        out = np.zeros_like(x)
        for e in range(spec.experts):
            rows, slots = np.nonzero(chosen == e)  # row-major: token order
            if capacity is not None:
                rows, slots = rows[:capacity], slots[:capacity]
            if rows.size:
                out[rows] += gates[rows, slots][:, None] * expert.numpy_forward(spec, weights, x[rows], f"experts.{e}.")
        if self.shared_hidden(spec):
            shared = expert.numpy_forward(spec, weights, x, "shared_experts.")
            if spec.shared_expert_gate:
                shared = sigmoid(linear(x, weights, "shared_expert_gate")) * shared
            out = out + shared
        return out
