"""What a variant reads of an FFN's spec: a Protocol, so the registry imports nothing of ours.

`ffn_cli.spec.FFNSpec` (a frozen dataclass, validated at construction) satisfies it; a variant's
methods take any object that does, and never see the class itself.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["FFNShape"]


class FFNShape(Protocol):
    """An FFN's sizes and options, as the variants use them (read-only)."""

    @property
    def d_model(self) -> int: ...

    @property
    def hidden(self) -> int:
        """d_ff, resolved."""
        ...

    @property
    def bias(self) -> bool | None: ...

    @property
    def dropout(self) -> float: ...

    @property
    def fused_gate_up(self) -> bool: ...

    @property
    def activation(self) -> str: ...

    # A mixture's.
    @property
    def experts(self) -> int: ...

    @property
    def top_k(self) -> int: ...

    @property
    def shared_experts(self) -> int: ...

    @property
    def shared_d_ff(self) -> int | None: ...

    @property
    def shared_expert_gate(self) -> bool: ...

    @property
    def latent(self) -> int | None:
        """The width routed experts read and write where it is not d_model (a latent MoE)."""
        ...

    def expert_shape(self) -> FFNShape:
        """The shape one routed expert sees: d_model, or the latent."""
        ...

    @property
    def expert_variant(self) -> str: ...

    @property
    def capacity_factor(self) -> float | None: ...

    @property
    def normalize_top_k(self) -> bool: ...

    # The masked FFN's.
    @property
    def sparsity(self) -> float: ...

    @property
    def mask_seed(self) -> int: ...
