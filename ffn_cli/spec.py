"""FFNSpec: the one validated description of an FFN that every other layer reads."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.names import unknown_name
from ffn_cli.variants import VARIANTS, Family, MixtureVariant, SingleFFN, Variant, variant_names
from ffn_cli.variants.gated import llama_hidden_dim

__all__ = ["INIT_SCHEMES", "MAX_DIM", "FFNSpec", "check_int", "llama_hidden_dim"]

INIT_SCHEMES = ("default", "xavier_normal", "kaiming_normal", "normal")
# Sizes beyond this are typos, not models: 2**24 hidden units is ~30x the widest FFN published.
MAX_DIM = 1 << 24
MAX_EXPERTS = 4096


def check_int(option: str, value: object, *, minimum: int = 1, maximum: int = MAX_DIM) -> int:
    """Validate an integer option (bools and floats are rejected, not coerced)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FFNError(option, value, _("must be an integer in [{minimum}, {maximum:,}]").format(minimum=minimum, maximum=maximum))
    if not minimum <= value <= maximum:
        raise FFNError(option, value, _("must be an integer in [{minimum}, {maximum:,}]").format(minimum=minimum, maximum=maximum))
    return value


def _check_fraction(option: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise FFNError(option, value, _("must be a number in [0, 1)"))
    return float(value)


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
            raise unknown_name("variant", self.variant, variant_names(), what=N_("variant"), listed_by="ffn variants")
        check_int("d_model", self.d_model)
        check_int("multiple_of", self.multiple_of)
        if self.ffn_dim_multiplier is not None and (
            isinstance(self.ffn_dim_multiplier, bool)
            or not isinstance(self.ffn_dim_multiplier, (int, float))
            or not 0 < self.ffn_dim_multiplier <= 64
        ):
            raise FFNError("ffn_dim_multiplier", self.ffn_dim_multiplier, _("must be a number in (0, 64]"))
        self._check_moe()
        if self.d_ff is None:
            object.__setattr__(self, "d_ff", self.ffn_variant.default_d_ff(self.d_model, self.multiple_of, self.ffn_dim_multiplier))
        check_int("d_ff", self.d_ff)
        if self.shared_d_ff is not None:
            check_int("shared_d_ff", self.shared_d_ff)
        if self.bias is None:
            object.__setattr__(self, "bias", self.ffn_variant.default_bias)
        _check_fraction("dropout", self.dropout)
        _check_fraction("sparsity", self.sparsity)
        if self.init not in INIT_SCHEMES:
            raise FFNError("init", self.init, _("choose one of {init_schemes}").format(init_schemes=", ".join(INIT_SCHEMES)))
        if self.fused_gate_up and "fused_gate_up" not in self.ffn_variant.own_options:
            readers = [name for name, v in VARIANTS.items() if "fused_gate_up" in v.own_options]
            raise FFNError("fused_gate_up", True, _("needs a gated variant ({variant_names})").format(variant_names=", ".join(readers)))
        check_int("mask_seed", self.mask_seed, minimum=0, maximum=2**63 - 1)

    def _check_moe(self) -> None:
        check_int("experts", self.experts, maximum=MAX_EXPERTS)
        check_int("top_k", self.top_k, maximum=MAX_EXPERTS)
        if self.top_k > self.experts:
            raise FFNError("top_k", self.top_k, _("must be at most experts ({experts})").format(experts=self.experts))
        check_int("shared_experts", self.shared_experts, minimum=0, maximum=MAX_EXPERTS)
        expert = VARIANTS.get(self.expert_variant)
        if expert is None or not expert.can_be_expert:
            allowed = [name for name, v in VARIANTS.items() if v.can_be_expert]
            raise unknown_name("expert_variant", self.expert_variant, allowed, what=N_("dense or gated variant"))
        if self.capacity_factor is not None and (
            isinstance(self.capacity_factor, bool)
            or not isinstance(self.capacity_factor, (int, float))
            or not 0 < self.capacity_factor <= 1024
        ):
            raise FFNError("capacity_factor", self.capacity_factor, _("must be a number in (0, 1024]"))

    # --- derived views -------------------------------------------------------------------

    @property
    def info(self) -> Variant:
        """The registry entry of this spec's variant."""
        return VARIANTS[self.variant]

    @property
    def family(self) -> Family:
        return self.info.family

    @property
    def mixture(self) -> MixtureVariant | None:
        """The mixture this spec describes, or None for a single FFN."""
        return self.info.as_mixture()

    @property
    def is_moe(self) -> bool:
        return self.mixture is not None

    @property
    def ffn_variant(self) -> SingleFFN:
        """The variant one FFN is made of: the expert variant for a mixture, else the variant itself."""
        return self.info.single(self)

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
        """Experts each token runs through: top_k, all of them for the soft mixture, 0 without experts."""
        return self.mixture.active_experts(self) if self.mixture else 0

    @property
    def shared_hidden(self) -> int:
        """Width of the one FFN that holds all shared experts (0 when there are none)."""
        return self.mixture.shared_hidden(self) if self.mixture else 0

    def with_(self, **changes: Any) -> FFNSpec:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Every field, for JSON: `FFNSpec(**spec.as_dict()) == spec`."""
        return asdict(self)
