"""FFNSpec: the one validated description of an FFN that every other layer reads."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.names import unknown_name
from ffn_cli.values import is_finite_number
from ffn_cli.variants import VARIANTS, Family, MixtureVariant, SingleFFN, Variant, mixture_of, single_of, variant_names
from ffn_cli.variants.gated import llama_hidden_dim

__all__ = [
    "FFN_PANEL",
    "INIT_SCHEMES",
    "MAX_DIM",
    "MOE_PANEL",
    "OPTION",
    "FFNSpec",
    "Option",
    "check_int",
    "llama_hidden_dim",
    "option",
    "spec_options",
]

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
    if not is_finite_number(value) or not 0.0 <= value < 1.0:
        raise FFNError(option, value, _("must be a number in [0, 1)"))
    return float(value)


# --- the options: each FFN option's command line, as plain data on its field -----------------

# The --help panels the options are drawn in (plain English; --help translates them as drawn).
FFN_PANEL = "FFN"
MOE_PANEL = "Mixture of experts"
# The metadata key of a field's Option.
OPTION = "option"


@dataclass(frozen=True)
class Option:
    """How an FFNSpec field is given on the command line: plain data, no typer. cli/ffn_options.py
    makes it a typer option of trace, params and bench, typed, parsed and defaulted as its field;
    configs/layer_select.py lets it override a model layer's value unless `fixed_by_model`."""

    flags: tuple[str, ...]  # the long name first ("--d-ff", "--bias/--no-bias"), then a short one
    help: str  # plain English; --help translates it as it draws it
    panel: str | None = FFN_PANEL  # the --help panel; None: the command's own Options
    fixed_by_model: bool = False  # it sizes the FFN from d_model: beside a model it is refused, not applied
    values_only: bool = False  # it changes the values but no count: ffn params refuses it
    comma_list: bool = False  # typed as text, one value or a comma list (params compares, bench sweeps)
    complete: str | None = None  # the shell completion of its values, by cli/ffn_options.py's name for it

    @property
    def name(self) -> str:
        """The option's name as click and a command's `given` know it: --fused/--no-fused is fused."""
        return self.flags[0].split("/")[0].removeprefix("--").replace("-", "_")


def option(*flags: str, help: str, **how: Any) -> dict[str, Option]:
    """A field's metadata: `field(default=…, metadata=option("--d-ff", help="…"))`."""
    return {OPTION: Option(flags, help, **how)}


_VARIANT_HELP = (
    "FFN variant: "
    + ", ".join(variant_names())
    + ". A comma list (or all): ffn params compares them, ffn bench times each; ffn trace runs one."
)


@dataclass(frozen=True)
class FFNSpec:
    """A frozen, validated FFN description; d_ff is resolved from the variant's rule when None.

    For `moe` and `soft_moe`, d_ff is the hidden width of one expert, whose architecture is
    `expert_variant`; shared experts (always applied) form one FFN of width
    shared_experts × (shared_d_ff or d_ff), as DeepSeek-MoE implements them.
    """

    # A field with `option(...)` metadata is an option of trace, params and bench (cli/ffn_options.py
    # makes it one) and, beside a model, overrides the layer's value (configs/layer_select.py).
    variant: str = field(
        default="relu", metadata=option("--variant", "-v", help=_VARIANT_HELP, panel=None, comma_list=True, complete="variants")
    )
    d_model: int = field(
        default=512,
        metadata=option(
            "--d-model", "-d", help="Model width d_model; a comma list makes a sweep in bench.", comma_list=True, fixed_by_model=True
        ),
    )
    d_ff: int | None = field(
        default=None, metadata=option("--d-ff", help="Hidden width d_ff (default: 4·d, or LLaMA's 2/3 rule for gated variants).")
    )
    # None: the variant's default (dense yes, gated and MoE no)
    bias: bool | None = field(default=None, metadata=option("--bias/--no-bias", help="Biases on the projections (default: the variant's)."))
    dropout: float = field(default=0.0, metadata=option("--dropout", help="Dropout after the activation, in [0, 1).", values_only=True))
    init: str = field(default="default", metadata=option("--init", help="Weight init: " + ", ".join(INIT_SCHEMES) + ".", values_only=True))
    zero_init_output: bool = field(
        default=False,
        metadata=option("--zero-init-output", help="Start down_proj at zero (the block starts as its residual).", values_only=True),
    )
    multiple_of: int = field(
        default=256, metadata=option("--multiple-of", help="Round the gated d_ff up to this multiple.", fixed_by_model=True)
    )
    ffn_dim_multiplier: float | None = field(
        default=None, metadata=option("--ffn-dim-multiplier", help="LLaMA's multiplier on the 2/3 rule.", fixed_by_model=True)
    )
    fused_gate_up: bool = field(default=False, metadata=option("--fused/--no-fused", help="One fused gate_up_proj for gated variants."))
    experts: int = field(default=8, metadata=option("--experts", "-E", help="Number of routed experts.", panel=MOE_PANEL))
    top_k: int = field(default=2, metadata=option("--top-k", "-k", help="Experts per token (1 = Switch).", panel=MOE_PANEL))
    shared_experts: int = field(
        default=0, metadata=option("--shared-experts", help="Always-on shared experts (DeepSeek-MoE).", panel=MOE_PANEL)
    )
    shared_d_ff: int | None = None
    shared_expert_gate: bool = False
    # Routed experts that read and write a latent narrower than d_model, through a down and an up
    # projection every token runs (Nemotron 3's moe_latent_size, its "latent MoE"); None: d_model.
    latent: int | None = None
    expert_variant: str = field(
        default="swiglu", metadata=option("--expert-variant", help="Variant of each expert.", panel=MOE_PANEL, complete="expert_variants")
    )
    capacity_factor: float | None = field(
        default=None, metadata=option("--capacity-factor", help="Expert capacity factor; overflow tokens are dropped.", panel=MOE_PANEL)
    )
    normalize_top_k: bool = field(
        default=True,
        metadata=option("--normalize-top-k/--no-normalize-top-k", help="Renormalise the top-k weights (Mixtral).", panel=MOE_PANEL),
    )
    sparsity: float = field(default=0.5, metadata=option("--sparsity", help="Fraction of hidden units masked (sparse)."))
    mask_seed: int = 0

    def __post_init__(self) -> None:
        self._check_types()
        if self.variant not in VARIANTS:
            raise unknown_name("variant", self.variant, variant_names(), what=N_("variant"), listed_by="ffn variants")
        check_int("d_model", self.d_model)
        check_int("multiple_of", self.multiple_of)
        if self.ffn_dim_multiplier is not None and (not is_finite_number(self.ffn_dim_multiplier) or not 0 < self.ffn_dim_multiplier <= 64):
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

    def _check_types(self) -> None:
        """A name is a string and a switch a bool (None where the variant decides): never a
        value that reads as one (`bias="no"` is true)."""
        for name in ("variant", "expert_variant", "init"):
            if not isinstance(getattr(self, name), str):
                raise FFNError(name, getattr(self, name), _("give a string"))
        for name in ("bias", "zero_init_output", "fused_gate_up", "shared_expert_gate", "normalize_top_k"):
            value = getattr(self, name)
            if not isinstance(value, bool) and not (name == "bias" and value is None):
                raise FFNError(name, value, _("give True or False"))

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
        if self.capacity_factor is not None and (not is_finite_number(self.capacity_factor) or not 0 < self.capacity_factor <= 1024):
            raise FFNError("capacity_factor", self.capacity_factor, _("must be a number in (0, 1024]"))
        if self.latent is not None:
            check_int("latent", self.latent)
            if "latent" not in self.info.own_options:
                raise FFNError("latent", self.latent, _("applies to routed experts (variant moe)"))

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
        return mixture_of(self.info)

    @property
    def is_moe(self) -> bool:
        return self.mixture is not None

    @property
    def ffn_variant(self) -> SingleFFN:
        """The variant one FFN is made of: the expert variant for a mixture, else the variant itself."""
        return single_of(self.info, self)

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

    def expert_shape(self) -> FFNSpec:
        """What one routed expert reads and writes: d_model, or the latent where there is one."""
        return self if self.latent is None else replace(self, d_model=self.latent, latent=None)

    def with_(self, **changes: Any) -> FFNSpec:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Every field, for JSON: `FFNSpec(**spec.as_dict()) == spec`."""
        return asdict(self)


def spec_options(spec_class: type[FFNSpec] = FFNSpec) -> dict[str, Option]:
    """Field name → its Option, in field order, for every field of `spec_class` that has one."""
    return {f.name: f.metadata[OPTION] for f in fields(spec_class) if OPTION in f.metadata}
