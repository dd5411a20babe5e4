"""FFNSpec: the one validated description of an FFN that every other layer reads."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from ffn_cli.errors import FFNError
from ffn_cli.variants import VARIANTS, Variant, variant_names

__all__ = ["INIT_SCHEMES", "MAX_DIM", "FFNSpec", "check_int", "default_d_ff", "llama_hidden_dim"]

INIT_SCHEMES = ("default", "xavier_normal", "kaiming_normal", "normal")
# Sizes beyond this are typos, not models: 2**24 hidden units is ~30x the widest FFN published.
MAX_DIM = 1 << 24
MAX_EXPERTS = 4096


def check_int(option: str, value: object, *, minimum: int = 1, maximum: int = MAX_DIM) -> int:
    """Validate an integer option (bools and floats are rejected, not coerced)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FFNError(option, value, f"must be an integer in [{minimum}, {maximum:,}]")
    if not minimum <= value <= maximum:
        raise FFNError(option, value, f"must be an integer in [{minimum}, {maximum:,}]")
    return value


def _check_fraction(option: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise FFNError(option, value, "must be a number in [0, 1)")
    return float(value)


def llama_hidden_dim(d_model: int, multiple_of: int = 256, ffn_dim_multiplier: float | None = None) -> int:
    """LLaMA's SwiGLU sizing: int(2·4d/3), times the multiplier, rounded UP to multiple_of.

    d_model 4096 → 11008; with multiplier 1.3 and multiple_of 1024 → 14336 (Llama 3 8B).
    """
    hidden = int(2 * 4 * d_model / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * math.ceil(hidden / multiple_of)


def default_d_ff(variant: Variant, d_model: int, multiple_of: int = 256, ffn_dim_multiplier: float | None = None) -> int:
    if variant.family == "gated":
        return llama_hidden_dim(d_model, multiple_of, ffn_dim_multiplier)
    return 4 * d_model


@dataclass(frozen=True)
class FFNSpec:
    """A frozen, validated FFN description; d_ff is resolved from the variant's rule when None.

    For `moe` and `soft_moe`, d_ff is the hidden width of one expert, whose architecture is
    `expert_variant`; shared experts (always applied) form one FFN of width
    shared_experts × (shared_d_ff or d_ff), as DeepSeek-MoE implements them.
    """

    variant: str = "relu"
    d_model: int = 512
    d_ff: int | None = None
    bias: bool | None = None  # None: the variant's default (dense yes, gated and MoE no)
    dropout: float = 0.0
    init: str = "default"
    zero_init_output: bool = False
    multiple_of: int = 256
    ffn_dim_multiplier: float | None = None
    fused_gate_up: bool = False
    experts: int = 8
    top_k: int = 2
    shared_experts: int = 0
    shared_d_ff: int | None = None
    shared_expert_gate: bool = False
    expert_variant: str = "swiglu"
    capacity_factor: float | None = None
    normalize_top_k: bool = True
    sparsity: float = 0.5
    mask_seed: int = 0

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise FFNError("variant", self.variant, "choose one of " + ", ".join(variant_names()))
        check_int("d_model", self.d_model)
        check_int("multiple_of", self.multiple_of)
        if self.ffn_dim_multiplier is not None and (
            isinstance(self.ffn_dim_multiplier, bool)
            or not isinstance(self.ffn_dim_multiplier, (int, float))
            or not 0 < self.ffn_dim_multiplier <= 64
        ):
            raise FFNError("ffn_dim_multiplier", self.ffn_dim_multiplier, "must be a number in (0, 64]")
        self._check_moe()
        if self.d_ff is None:
            object.__setattr__(self, "d_ff", default_d_ff(self.ffn_variant, self.d_model, self.multiple_of, self.ffn_dim_multiplier))
        check_int("d_ff", self.d_ff)
        if self.shared_d_ff is not None:
            check_int("shared_d_ff", self.shared_d_ff)
        if self.bias is None:
            object.__setattr__(self, "bias", self.ffn_variant.default_bias)
        _check_fraction("dropout", self.dropout)
        _check_fraction("sparsity", self.sparsity)
        if self.init not in INIT_SCHEMES:
            raise FFNError("init", self.init, "choose one of " + ", ".join(INIT_SCHEMES))
        if self.fused_gate_up and self.ffn_variant.family != "gated":
            raise FFNError("fused_gate_up", True, f"needs a gated variant ({', '.join(variant_names('gated'))})")
        check_int("mask_seed", self.mask_seed, minimum=0, maximum=2**63 - 1)

    def _check_moe(self) -> None:
        check_int("experts", self.experts, maximum=MAX_EXPERTS)
        check_int("top_k", self.top_k, maximum=MAX_EXPERTS)
        if self.top_k > self.experts:
            raise FFNError("top_k", self.top_k, f"must be at most experts ({self.experts})")
        check_int("shared_experts", self.shared_experts, minimum=0, maximum=MAX_EXPERTS)
        expert = VARIANTS.get(self.expert_variant)
        if expert is None or expert.family not in ("dense", "gated"):
            allowed = variant_names("dense") + variant_names("gated")
            raise FFNError("expert_variant", self.expert_variant, "choose a dense or gated variant: " + ", ".join(allowed))
        if self.capacity_factor is not None and (
            isinstance(self.capacity_factor, bool)
            or not isinstance(self.capacity_factor, (int, float))
            or not 0 < self.capacity_factor <= 1024
        ):
            raise FFNError("capacity_factor", self.capacity_factor, "must be a number in (0, 1024]")

    # --- derived views -------------------------------------------------------------------

    @property
    def info(self) -> Variant:
        """The registry entry of this spec's variant."""
        return VARIANTS[self.variant]

    @property
    def family(self) -> str:
        return self.info.family

    @property
    def is_moe(self) -> bool:
        return self.family == "moe"

    @property
    def ffn_variant(self) -> Variant:
        """The variant one FFN is made of: the expert variant for MoE, else the variant itself."""
        return VARIANTS[self.expert_variant] if self.is_moe else self.info

    @property
    def activation(self) -> str:
        return self.ffn_variant.activation

    @property
    def hidden(self) -> int:
        """d_ff as an int (always resolved after construction)."""
        assert self.d_ff is not None
        return self.d_ff

    @property
    def active_experts(self) -> int:
        """Routed experts each token runs through: top_k, or all of them for the soft mixture."""
        if self.variant == "soft_moe":
            return self.experts
        return self.top_k if self.variant == "moe" else 0

    @property
    def shared_hidden(self) -> int:
        """Width of the one FFN that holds all shared experts (0 when there are none).

        Only top-k routing has shared experts; in the soft mixture every expert is shared.
        """
        if self.variant != "moe":
            return 0
        return self.shared_experts * (self.shared_d_ff or self.hidden)

    def expert_spec(self, d_ff: int | None = None) -> FFNSpec:
        """One expert (or the shared-expert FFN) as a plain dense or gated spec."""
        return FFNSpec(
            variant=self.expert_variant,
            d_model=self.d_model,
            d_ff=d_ff or self.hidden,
            bias=self.bias,
            dropout=self.dropout,
            init=self.init,
            zero_init_output=self.zero_init_output,
            fused_gate_up=self.fused_gate_up,
        )

    def with_(self, **changes: Any) -> FFNSpec:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The fields that matter for this variant, for headers and JSON."""
        keep = {"variant", "d_model", "d_ff", "bias", "dropout", "init"}
        if self.zero_init_output:
            keep |= {"zero_init_output"}
        if self.family == "gated":
            keep |= {"fused_gate_up"}
        if self.is_moe:
            keep |= {"experts", "top_k", "expert_variant", "shared_experts", "capacity_factor", "normalize_top_k", "fused_gate_up"}
        if self.family == "sparse":
            keep |= {"sparsity"}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in keep}
