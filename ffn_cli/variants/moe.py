"""`moe`: top-k routed experts, with optional shared experts (Shazeer 2017, Mixtral, DeepSeek-MoE)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from ffn_cli.i18n import N_, Message
from ffn_cli.variants.base import ExpertLayout, FlopStep, ParamTensor, SavedTensor, Weights, Width
from ffn_cli.variants.mixture import MixtureVariant

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["DispatchOrder", "DispatchStats", "RoutedMoE"]

# A latent MoE's projections around its routed experts (transformers' names, Nemotron 3's).
LATENT_DOWN, LATENT_UP = "fc1_latent_proj", "fc2_latent_proj"

# How the forward finds each expert's rows: one torch.where per expert, or one sort of all the
# (token, slot) pairs by expert. Both keep token order within an expert, so both drop alike.
DispatchOrder = Literal["by_expert", "sorted"]


def _in_latent(formula: str) -> str:
    """An expert's formula in d written for experts that read and write the latent L."""
    return re.sub(r"\bd\b", "L", formula)


@dataclass
class DispatchStats:
    """What the last MoE forward routed: tokens per expert, after capacity, and drops."""

    tokens: int
    tokens_per_expert: list[int] = field(default_factory=list)
    dropped: int = 0
    capacity: int | None = None
    assumed_balanced: bool = False  # meta tensors have no values to route by

    def keep(self, n: int) -> int:
        """The rows an expert keeps of the n routed to it; the rest are dropped (Switch)."""
        if self.capacity is not None and n > self.capacity:
            self.dropped += n - self.capacity
            return self.capacity
        return n


class RoutedMoE(MixtureVariant):
    name = "moe"
    formula = "Σ_{i∈top-k} ĝ_i·expert_i(x) + shared(x),  g = softmax(W_router·x)"
    origin = "Shazeer et al. 2017; Switch (Fedus et al. 2021, k=1); Mixtral 2024; DeepSeek-MoE 2024"
    summary = "top-k routed experts with optional shared experts"
    is_routed = True
    torch_module = "ffn_cli.modules.mixture:MoEFFN"
    own_options = MixtureVariant.own_options | {
        "top_k",
        "shared_experts",
        "shared_d_ff",
        "shared_expert_gate",
        "capacity_factor",
        "normalize_top_k",
        "latent",
    }
    active_symbol = "k"
    expert_parallel = True
    dispatch_step = "dispatch"
    step_order = (
        "flatten",
        "router",
        "softmax",
        "top_k",
        "renormalise",
        LATENT_DOWN,
        "dispatch",
        "experts",
        "combine",
        LATENT_UP,
        "shared_experts",
        "shared_expert_gate",
        "shared_add",
        "unflatten",
    )

    def active_experts(self, spec: FFNShape) -> int:
        return spec.top_k

    def shared_hidden(self, spec: FFNShape) -> int:
        return spec.shared_experts * (spec.shared_d_ff or spec.hidden)

    def expert_layout(self, spec: FFNShape) -> ExpertLayout:
        """The router picks top_k of the E experts for each token; shared experts run on all."""
        return replace(super().expert_layout(spec), top_k=spec.top_k)

    def header_words(self, spec: FFNShape) -> list[Message]:
        top_k = N_("top-{k} renormalised") if spec.normalize_top_k else N_("top-{k}")
        parts = [*super().header_words(spec), Message.of(top_k, k=spec.top_k)]
        if spec.shared_experts:
            parts.append(Message.of(N_("{count} shared"), count=spec.shared_experts))
        if spec.latent:
            parts.append(Message.of(N_("experts in a latent of {latent}"), latent=f"{spec.latent:,}"))
        if spec.capacity_factor is not None:
            parts.append(Message.of(N_("capacity factor {factor}"), factor=f"{spec.capacity_factor:g}"))
        return parts

    def all_experts_options(self, spec: FFNShape) -> dict[str, Any]:
        return {"top_k": spec.experts}

    def model_words(self, spec: FFNShape) -> tuple[str, list[str]]:
        routed, words = super().model_words(spec)
        words.append(Message.of(N_(", top-{k}"), k=spec.top_k))
        if spec.latent:
            words.append(Message.of(N_(", in a latent of {latent}"), latent=f"{spec.latent:,}"))
        shared = self.shared_hidden(spec)
        if shared:
            words.append(Message.of(N_(", shared d_ff {d_ff}"), d_ff=f"{shared:,}"))
            if spec.shared_expert_gate:
                words.append(Message.of(N_(" gated")))
        return routed, words

    def header_formula(self, spec: FFNShape) -> str:
        """The formula with the shared term only when there are shared experts, and the experts in
        their latent where they have one."""
        text = self.formula if self.shared_hidden(spec) else self.formula.replace(" + shared(x)", "")
        if spec.latent:
            text = text.replace("Σ_{i∈top-k} ĝ_i·expert_i(x)", "W_fc2·Σ_{i∈top-k} ĝ_i·expert_i(W_fc1·x)")
        return text

    # --- layout -------------------------------------------------------------------------------

    def param_tensors(self, spec: FFNShape) -> list[ParamTensor]:
        tensors = super().param_tensors(spec)
        if spec.latent:
            tensors += [
                ParamTensor(f"{LATENT_DOWN}.weight", (spec.latent, spec.d_model)),
                ParamTensor(f"{LATENT_UP}.weight", (spec.d_model, spec.latent)),
            ]
        shared = self.shared_hidden(spec)
        if shared:
            tensors += self.expert(spec).tensors(spec, shared, "shared_experts.")
            if spec.shared_expert_gate:
                tensors.append(ParamTensor("shared_expert_gate.weight", (1, spec.d_model)))
        return tensors

    def active_params(self, spec: FFNShape) -> int:
        """The router, k experts and the shared ones: what one token touches."""
        one = sum(t.count for t in self.expert(spec).tensors(spec.expert_shape(), spec.hidden))
        return sum(t.count for t in self.param_tensors(spec)) - (spec.experts - spec.top_k) * one

    def param_formula(self, spec: FFNShape) -> str:
        one = self.expert(spec).param_formula(spec)
        text = f"E·d + E·({_in_latent(one)})" if spec.latent else f"E·d + E·({one})"
        if spec.latent:
            text += " + 2·d·L"
        if self.shared_hidden(spec):
            text += " + shared(" + one.replace("d_ff", "d_sh") + ")"
            if spec.shared_expert_gate:
                text += " + d"
        return text

    def matmul_flops_formula(self, spec: FFNShape) -> str:
        one = self.expert(spec).matmul_per_token()
        text = f"2·d·E + k·{_in_latent(one)} + 4·d·L" if spec.latent else f"2·d·E + k·{one}"
        if self.shared_hidden(spec):
            text += " + " + one.replace("d_ff", "d_sh") + (" + 2·d" if spec.shared_expert_gate else "")
        return text

    # --- accounting ---------------------------------------------------------------------------

    def flop_steps(self, spec: FFNShape) -> list[FlopStep]:
        d, k = spec.d_model, spec.top_k
        steps = self.router_steps(spec)
        if spec.normalize_top_k:
            steps.append(FlopStep("renormalise", 0, 2 * k, "top-k weights / their sum"))
        if spec.latent:
            steps.append(FlopStep(LATENT_DOWN, 2 * d * spec.latent, 0, "x·W_fc1ᵀ: d → L"))
        steps += self.expert_steps(spec)
        if spec.latent:
            steps.append(FlopStep(LATENT_UP, 2 * spec.latent * d, 0, "y·W_fc2ᵀ: L → d"))
        shared = self.shared_hidden(spec)
        if shared:
            steps += self.expert(spec).steps(spec, shared, "shared_experts.")
            if spec.shared_expert_gate:
                steps.append(FlopStep("shared_expert_gate", 2 * d, 4 + 2 * d, "σ(x·w_g)·shared + routed"))
            else:
                steps.append(FlopStep("shared_add", 0, d, "shared + routed"))
        return steps

    def saved_tensors(self, spec: FFNShape) -> list[SavedTensor]:
        """Without capacity drops every token reaches k experts, whatever the routing, so the
        per-expert tensors sum to k per token: each expert's own, its output and gate weight
        (kept by the weighting multiply), the weighted output (kept by index_add), and the
        int64 token and slot indices of its rows (one storage: torch.where's columns)."""
        k, inner = spec.top_k, spec.expert_shape().d_model  # what the experts read and write: d, or the latent
        kept = [*self.saved_router(spec), SavedTensor("top-k indices", k, Width.INDEX)]
        if spec.normalize_top_k:
            kept += [SavedTensor("top-k weights", k, Width.GATE), SavedTensor("their sum", 1, Width.GATE)]
        if spec.latent:
            kept.append(SavedTensor("latent tokens (fc1's output, the experts' input)", inner))
        kept += self.saved_expert_path(spec)
        kept += [
            SavedTensor("expert outputs", k * inner),
            SavedTensor("gate weight per row", k),
            SavedTensor("weighted outputs (index_add keeps its source)", k * inner),
            SavedTensor("token and slot indices", 2 * k, Width.INDEX),
        ]
        if spec.latent:
            kept.append(SavedTensor("combined latent (fc2's input)", inner))
        shared = self.shared_hidden(spec)
        if shared:
            # The shared experts read the same tokens as the router: x is kept once.
            kept += [
                SavedTensor(f"shared: {s.name}", s.per_token, s.width, s.fixed)
                for s in self.expert(spec).saved(spec, shared)
                if s.name != "x"
            ]
            if spec.shared_expert_gate:
                kept += [SavedTensor("σ(shared gate)", 1), SavedTensor("shared output", spec.d_model)]
        return kept

    # --- labels -------------------------------------------------------------------------------

    def step_formula(self, spec: FFNShape, step: str) -> str | Message:
        return {
            "top_k": Message.of(N_("top-{k} of E by g"), k=spec.top_k),
            "renormalise": "ĝ = g / Σ_top-k g",
            "combine": "Σ_k ĝ_k·expert_k(x)",
            "shared_add": N_("routed + shared"),
            "shared_expert_gate": "σ(x·w_g)·shared + routed",
            LATENT_DOWN: "x·W_fc1ᵀ: d → L",
            LATENT_UP: "y·W_fc2ᵀ: L → d",
        }.get(step) or super().step_formula(spec, step)

    def step_explanation(self, spec: FFNShape, step: str) -> Message | None:
        texts = {
            "top_k": N_(
                "keeps the {k} experts with the largest g for each token: only they run on it, so a token costs "
                "{k} experts' FLOPs, not {experts}"
            ),
            "renormalise": N_("rescales each token's {k} chosen weights to sum to 1"),
            "combine": N_("adds each expert's output back at its tokens, weighted by its ĝ: y = Σ_k ĝ_k·expert_k(x)"),
            "shared_add": N_("adds the shared experts' output to the routed experts'"),
            "shared_expert_gate": N_("a sigmoid gate per token scales the shared experts' output before it joins the routed one"),
            LATENT_DOWN: N_("projects each token down to the latent of {latent} the routed experts read and write (a latent MoE)"),
            LATENT_UP: N_("projects the experts' combined output back up from the latent of {latent} to d_model"),
        }
        if step in texts:
            return Message.of(texts[step], k=spec.top_k, experts=spec.experts, latent=f"{spec.latent or spec.d_model:,}")
        return super().step_explanation(spec, step)

    # --- torch --------------------------------------------------------------------------------

    def forward(self, spec: FFNShape, w: Weights, x: Any) -> Any:
        return self.forward_routed(spec, w, x)[0]

    def forward_routed(self, spec: FFNShape, w: Weights, x: Any, dispatch: DispatchOrder = "by_expert") -> tuple[Any, DispatchStats]:
        """The output, and what was routed: float32 softmax over all experts, top-k, optional
        renormalisation (Mixtral), optional capacity with dropped tokens (Switch), shared
        experts (DeepSeek-MoE). Each step runs in its named step, whichever order the dispatch takes."""
        from ffn_cli.variants import routing as r

        tokens = w.step("flatten", r.flatten, x)  # (N, d)
        _, weights, chosen = self.route(spec, w, tokens)  # (N, k) each
        n = tokens.shape[0]
        stats = DispatchStats(tokens=n, capacity=r.capacity(spec, n), assumed_balanced=x.is_meta)
        inner = w.linear(LATENT_DOWN, tokens) if spec.latent else tokens  # what the experts read: (N, d) or (N, L)
        out = w.step("combine", r.zeros_like, inner)
        for e, (rows, slot) in self._assignments(spec, w, chosen, stats, dispatch).items():
            expert_out = w.call(f"experts.{e}", w.step("dispatch", r.gather, inner, rows))  # (n_e, d) or (n_e, L)
            out = self.combine(w, out, rows, expert_out, weights, slot)
        if spec.latent:
            out = w.linear(LATENT_UP, out)
        return w.step("unflatten", r.unflatten, self.add_shared(spec, w, tokens, out), x.shape), stats

    def route(self, spec: FFNShape, w: Weights, tokens: Any) -> tuple[Any, Any, Any]:
        """(router logits (N, E), gate weights (N, k) in the tokens' dtype, chosen experts (N, k))."""
        from ffn_cli.variants import routing as r

        logits = w.linear("router", tokens)
        probs = w.step("softmax", r.router_probs, logits)  # (N, E)
        weights, chosen = r.route(spec, probs, tokens.dtype, w.step)
        return logits, weights, chosen

    def combine(self, w: Weights, out: Any, rows: Any, expert_out: Any, weights: Any, slot: Any) -> Any:
        """out with each of `rows`' expert output added back, weighted by its gate weight."""
        from ffn_cli.variants import routing as r

        return w.step("combine", r.weighted_add, out, rows, expert_out, weights, slot)

    def add_shared(self, spec: FFNShape, w: Weights, tokens: Any, routed: Any) -> Any:
        """The shared experts' output added to the routed one, through a sigmoid gate where there is one (Qwen2-MoE)."""
        from ffn_cli.variants import routing as r

        if not self.shared_hidden(spec):
            return routed
        shared = w.call("shared_experts", tokens)
        if spec.shared_expert_gate:
            gate = w.linear("shared_expert_gate", tokens)
            return w.step("shared_expert_gate", r.gated_add, gate, shared, routed)
        return w.step("shared_add", r.add, routed, shared)

    def _assignments(
        self, spec: FFNShape, w: Weights, chosen: Any, stats: DispatchStats, dispatch: DispatchOrder
    ) -> dict[int, tuple[Any, Any]]:
        """The (token rows, slot) of each expert that has tokens after capacity, in token order.
        The counts come first, in one step: as in transformers' MoE blocks, an expert no token
        chose is not looked up and does not run. `stats` keeps every expert's count, zeros too."""
        from ffn_cli.variants import routing as r

        experts = spec.experts
        if chosen.is_meta:
            counts = [r.balanced_share(chosen.numel(), experts, e) for e in range(experts)]
        elif dispatch == "sorted":
            token_idx, slot, counted = w.step("dispatch", r.sort_by_expert, chosen, experts)
            counts = counted.tolist()
        else:
            counts = w.step("dispatch", r.counts, chosen, experts).tolist()
        kept = [stats.keep(n) for n in counts]
        stats.tokens_per_expert = kept
        hit = [e for e, n in enumerate(kept) if n]
        if chosen.is_meta:
            return {e: w.step("dispatch", r.balanced_rows, chosen, experts, e) for e in hit}
        if dispatch == "sorted":
            starts = [0, *itertools.accumulate(counts)]
            return {e: w.step("dispatch", r.kept_rows, token_idx, slot, starts[e], kept[e]) for e in hit}
        pairs = {e: w.step("dispatch", r.rows_of, chosen, e) for e in hit}
        return {
            e: w.step("dispatch", r.kept_rows, rows, slot, 0, kept[e]) if kept[e] < counts[e] else (rows, slot)
            for e, (rows, slot) in pairs.items()
        }
