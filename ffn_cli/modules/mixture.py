"""The torch modules of the mixtures: `moe` (top-k routing, capacity, shared experts) and
`soft_moe` (every expert on every token). Each holds the router, the experts and the shared
experts as submodules; the forward is the variant's own (`variants/moe.py`, `soft_moe.py`),
run on these weights, each step in a named region, so the trace labels it by where it ran,
whichever order the dispatch takes."""

from __future__ import annotations

from torch import Tensor, nn

from ffn_cli.modules.ffn import FFN, FFNModule, ModuleWeights, make_linear
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import MixtureVariant
from ffn_cli.variants.moe import DispatchOrder, DispatchStats, RoutedMoE
from ffn_cli.variants.routing import balanced_share

__all__ = ["DispatchOrder", "DispatchStats", "MoEFFN", "SoftMoEFFN", "balanced_share"]


class _Mixture(FFNModule):
    """The router and E experts of the spec's expert variant."""

    def __init__(self, spec: FFNSpec, variant: MixtureVariant) -> None:
        super().__init__(spec, variant)
        self.mixture = variant
        expert = variant.expert(spec)
        self.router = make_linear(spec.d_model, spec.experts, False)
        self.experts = nn.ModuleList(FFN(spec.expert_shape(), expert, spec.hidden) for _ in range(spec.experts))

    def _forward(self, x: Tensor) -> Tensor:
        return self.mixture.forward(self.spec, ModuleWeights(self), x)


class MoEFFN(_Mixture):
    """Top-k routing, with shared experts (and their gate) when the spec has them; keeps what
    its last forward routed (`last_dispatch`)."""

    def __init__(self, spec: FFNSpec, variant: RoutedMoE, dispatch: DispatchOrder = "by_expert") -> None:
        super().__init__(spec, variant)
        self.routed = variant
        shared = variant.shared_hidden(spec)
        expert = variant.expert(spec)
        self.shared_experts = FFN(spec, expert, shared) if shared else None
        self.shared_expert_gate = make_linear(spec.d_model, 1, False) if shared and spec.shared_expert_gate else None
        if spec.latent:  # the routed experts' way into and out of their latent
            self.fc1_latent_proj = make_linear(spec.d_model, spec.latent, False)
            self.fc2_latent_proj = make_linear(spec.latent, spec.d_model, False)
        self.dispatch = dispatch

    def _forward(self, x: Tensor) -> Tensor:
        out, self.last_dispatch = self.routed.forward_routed(self.spec, ModuleWeights(self), x, self.dispatch)
        return out


class SoftMoEFFN(_Mixture):
    """The dense mixture: every expert runs on every token, weighted by a softmax gate."""
