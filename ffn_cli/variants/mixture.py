"""Mixtures of experts: a router, E experts of one dense or gated variant, and how tokens
reach them. `moe` (top-k routing) and `soft_moe` (every expert, softmax-weighted) subclass it.

The expert is an ordinary single-FFN variant (`spec.expert_variant`), so every expert layout
the registry knows is a valid expert.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ffn_cli.i18n import N_, Message
from ffn_cli.variants.base import ExpertLayout, Family, FlopStep, ParamTensor, SavedTensor, SplitKind, Variant, Weights, Width
from ffn_cli.variants.single import SingleFFN
from ffn_cli.variants.table import VARIANTS

if TYPE_CHECKING:
    from ffn_cli.variants.shape import FFNShape

__all__ = ["EXPERTS_STEP", "SOFTMAX_FLOPS_PER_ELEMENT", "MixtureVariant", "expert_of"]

# The router's tensor, E × d, by the name a mixture's tensors list it under.
ROUTER_WEIGHT = "router.weight"
# Operations per element of the router's float32 softmax: exp, sum, divide.
SOFTMAX_FLOPS_PER_ELEMENT = 3
# Where the experts' own steps sit in a mixture's step order.
EXPERTS_STEP = "experts"


class MixtureVariant(Variant):
    """What top-k and soft mixtures share: the router, E experts, the combine."""

    family = Family.MOE
    activation = "the expert's"  # a mixture has none of its own: its experts' (spec.activation)
    default_bias = False
    can_be_expert = False
    # Whether each token reaches only some experts (so experts can live on other ranks).
    is_routed: ClassVar[bool] = False
    # The experts a token runs through, as the formulas write it: k of them, or all E.
    active_symbol: ClassVar[str] = "E"
    d_ff_rule = "per expert: the expert variant's rule"
    d_ff_rule_short = N_("the expert's")
    part_name = N_("MoE FFN")
    tensor_parallel = False  # its experts are whole FFNs: expert parallelism splits them, if any

    own_options = frozenset({"experts", "expert_variant"})

    def experts_held(self, spec: FFNShape) -> int:
        return spec.experts

    def shard_split(self, spec: FFNShape, name: str) -> tuple[SplitKind, int | None]:
        """Expert parallelism's cut: experts.{i}.… whole on its owner, the rest replicated."""
        expert = expert_of(name)
        return (SplitKind.REPLICATED, None) if expert is None else (SplitKind.EXPERT, expert)

    def model_words(self, spec: FFNShape) -> tuple[str, list[str]]:
        routed = Message.of(N_("router + {experts} × {variant}"), experts=spec.experts, variant=spec.expert_variant)
        words: list[str] = [f" d_ff {spec.hidden:,}"]
        if spec.bias:
            words.append(Message.of(N_(", biases")))
        return routed, words

    def options_used(self, spec: FFNShape) -> frozenset[str]:
        """The mixture's own options and those of the FFN each expert is."""
        return self.own_options | self.expert(spec).options_used(spec)

    def expert(self, spec: FFNShape) -> SingleFFN:
        expert = VARIANTS[spec.expert_variant]
        assert isinstance(expert, SingleFFN)
        return expert

    def default_d_ff(self, d_model: int, multiple_of: int, ffn_dim_multiplier: float | None) -> int:
        raise AssertionError("a mixture's d_ff is its expert variant's")

    def header_words(self, spec: FFNShape) -> list[Message]:
        return [Message.of(N_("{experts} experts of {variant}"), experts=spec.experts, variant=spec.expert_variant)]

    def active_experts(self, spec: FFNShape) -> int:
        """Experts each token runs through."""
        raise NotImplementedError

    def shared_hidden(self, spec: FFNShape) -> int:
        """Width of the one FFN holding all shared experts (0: none)."""
        return 0

    def expert_layout(self, spec: FFNShape) -> ExpertLayout:
        """E experts of the expert variant, every one on every token (a routed mixture picks k)."""
        return ExpertLayout(spec.experts, spec.expert_variant, None, self.shared_hidden(spec))

    # --- layout -------------------------------------------------------------------------------

    def param_tensors(self, spec: FFNShape) -> list[ParamTensor]:
        expert, inner = self.expert(spec), spec.expert_shape()
        tensors = [ParamTensor(ROUTER_WEIGHT, (spec.experts, spec.d_model))]
        for i in range(spec.experts):
            tensors += expert.tensors(inner, spec.hidden, f"experts.{i}.")
        return tensors

    def param_formula(self, spec: FFNShape) -> str:
        return f"E·d + E·({self.expert(spec).param_formula(spec)})"

    def matmul_flops_formula(self, spec: FFNShape) -> str:
        return f"2·d·E + {self.active_symbol}·{self.expert(spec).matmul_per_token()}"

    # --- accounting ---------------------------------------------------------------------------

    def router_steps(self, spec: FFNShape) -> list[FlopStep]:
        d, e = spec.d_model, spec.experts
        return [
            FlopStep("router", 2 * d * e, 0, "x·W_routerᵀ"),
            FlopStep("softmax", 0, SOFTMAX_FLOPS_PER_ELEMENT * e, "softmax over E in float32"),
        ]

    def expert_steps(self, spec: FFNShape) -> list[FlopStep]:
        k, inner = self.active_experts(spec), spec.expert_shape()
        steps = [s.times(k) for s in self.expert(spec).steps(inner, spec.hidden, "expert.")]
        return [*steps, FlopStep("combine", 0, 2 * k * inner.d_model, "Σ_k g_k·y_k")]

    def saved_expert_path(self, spec: FFNShape) -> list[SavedTensor]:
        """One expert's saved tensors, scaled to the tokens that reach it (k per token)."""
        k, inner = self.active_experts(spec), spec.expert_shape()
        return [SavedTensor(f"experts: {s.name}", k * s.per_token, s.width, s.fixed) for s in self.expert(spec).saved(inner, spec.hidden)]

    def saved_router(self, spec: FFNShape) -> list[SavedTensor]:
        return [SavedTensor("x", spec.d_model), SavedTensor("router probabilities", spec.experts, Width.GATE)]

    # --- labels -------------------------------------------------------------------------------

    def step_formula(self, spec: FFNShape, step: str) -> str:
        return {
            "flatten": N_("tokens: (B, T, d) → (B·T, d)"),
            "router": "x·W_routerᵀ",
            "softmax": N_("g = softmax over E experts, float32"),
            "dispatch": N_("gather each expert's tokens"),
            "shared_experts": self.expert(spec).header_formula(spec),
            "unflatten": "(B·T, d) → (B, T, d)",
        }.get(step, step)

    def step_explanation(self, spec: FFNShape, step: str) -> Message | None:
        """The router's and the experts' steps; a routed mixture adds its own (top-k, combine)."""
        texts = {
            "flatten": N_("lays the batch out as one row per token, (B·T, d): experts are chosen token by token"),
            "router": N_("the router: scores each token against each of the {experts} experts, one logit per expert"),
            "softmax": N_(
                "turns each token's {experts} logits into weights g that sum to 1 (in float32, so half precision does not round the choice)"
            ),
            "dispatch": N_("gathers the tokens each expert was chosen for, so each expert runs once, on its own rows"),
            "shared_experts": N_("shared experts: an FFN of d_ff {shared} that every token runs through, beside the routed experts"),
            "unflatten": N_("restores the (B, T, d) shape, so the residual connection can add the output to the input"),
        }
        if step.startswith(EXPERTS_STEP + "."):
            text = N_("one expert: a whole {expert} FFN of d_ff {d_ff}, run only on the tokens routed to it")
            return Message.of(text, expert=spec.expert_variant, d_ff=spec.hidden)
        if step in texts:
            return Message.of(texts[step], experts=spec.experts, shared=self.shared_hidden(spec))
        return None

    # --- torch --------------------------------------------------------------------------------

    def forward(self, spec: FFNShape, w: Weights, x: Any) -> Any:
        """The forward on (B, T, d) tokens, written once against `Weights` (torch ops from `routing.py`)."""
        raise NotImplementedError


def expert_of(name: str) -> int | None:
    """The expert a mixture's parameter (or step) `name` belongs to: i for experts.{i}.…, at any
    depth (ffn.experts.7.up.weight), else None. Names are parsed here and nowhere else."""
    parts = name.split(".")
    for i in range(len(parts) - 1):
        if parts[i] == EXPERTS_STEP and parts[i + 1].isdigit():
            return int(parts[i + 1])
    return None
