"""The options that shape an FFN, declared once for `trace`, `params` and `bench`.

Each field of `FFNOptions` is one command-line option with FFNSpec's own default, so a
default lives in FFNSpec alone; `with_option_groups` gives a command these options and hands
it one parsed `FFNOptions`. `--variant` and `--d-model` take a comma list: params compares the
variants, bench sweeps both, trace runs one FFN and says so when given more.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Annotated, Any

import typer

from ffn_cli.cli.complete import complete_expert_variants, complete_variants
from ffn_cli.cli.numbers import parse_float, parse_int
from ffn_cli.cli.options import parse_int_list, parse_list
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, _
from ffn_cli.names import unknown_name
from ffn_cli.spec import INIT_SCHEMES, FFNSpec
from ffn_cli.variants import VARIANTS, variant_names

__all__ = ["FFN_DEFAULTS", "FFNOptions"]


class _FFNDefaults:
    """FFNSpec's field defaults, read from the dataclass."""

    def __init__(self) -> None:
        for f in fields(FFNSpec):
            setattr(self, f.name, f.default)


FFN_DEFAULTS: Any = _FFNDefaults()

_FFN = "FFN"
_MOE = "Mixture of experts"

# Options whose FFNSpec field has another name.
_FIELDS = {"fused": "fused_gate_up"}


@dataclass(frozen=True)
class FFNOptions:
    """The FFN options as parsed: text for the two that take a comma list, values otherwise."""

    variant: Annotated[
        str,
        typer.Option(
            "--variant",
            "-v",
            autocompletion=complete_variants,
            help="FFN variant: "
            + ", ".join(variant_names())
            + ". A comma list (or all): ffn params compares them, ffn bench times each; ffn trace runs one.",
        ),
    ] = FFN_DEFAULTS.variant
    d_model: Annotated[
        str, typer.Option("--d-model", "-d", help="Model width d_model; a comma list makes a sweep in bench.", rich_help_panel=_FFN)
    ] = str(FFN_DEFAULTS.d_model)
    d_ff: Annotated[
        int | None,
        typer.Option(
            "--d-ff",
            parser=parse_int,
            help="Hidden width d_ff (default: 4·d, or LLaMA's 2/3 rule for gated variants).",
            rich_help_panel=_FFN,
        ),
    ] = FFN_DEFAULTS.d_ff
    bias: Annotated[
        bool | None,
        typer.Option(
            "--bias/--no-bias", help="Biases on the projections (default: the variant's).", rich_help_panel=_FFN, show_default=False
        ),
    ] = FFN_DEFAULTS.bias
    dropout: Annotated[
        float, typer.Option("--dropout", parser=parse_float, help="Dropout after the activation, in [0, 1).", rich_help_panel=_FFN)
    ] = FFN_DEFAULTS.dropout
    init: Annotated[str, typer.Option("--init", help="Weight init: " + ", ".join(INIT_SCHEMES) + ".", rich_help_panel=_FFN)] = (
        FFN_DEFAULTS.init
    )
    zero_init_output: Annotated[
        bool, typer.Option("--zero-init-output", help="Start down_proj at zero (the block starts as its residual).", rich_help_panel=_FFN)
    ] = FFN_DEFAULTS.zero_init_output
    multiple_of: Annotated[
        int, typer.Option("--multiple-of", parser=parse_int, help="Round the gated d_ff up to this multiple.", rich_help_panel=_FFN)
    ] = FFN_DEFAULTS.multiple_of
    ffn_dim_multiplier: Annotated[
        float | None,
        typer.Option("--ffn-dim-multiplier", parser=parse_float, help="LLaMA's multiplier on the 2/3 rule.", rich_help_panel=_FFN),
    ] = FFN_DEFAULTS.ffn_dim_multiplier
    fused: Annotated[bool, typer.Option("--fused/--no-fused", help="One fused gate_up_proj for gated variants.", rich_help_panel=_FFN)] = (
        FFN_DEFAULTS.fused_gate_up
    )
    sparsity: Annotated[
        float, typer.Option("--sparsity", parser=parse_float, help="Fraction of hidden units masked (sparse).", rich_help_panel=_FFN)
    ] = FFN_DEFAULTS.sparsity
    experts: Annotated[int, typer.Option("--experts", "-E", parser=parse_int, help="Number of routed experts.", rich_help_panel=_MOE)] = (
        FFN_DEFAULTS.experts
    )
    top_k: Annotated[int, typer.Option("--top-k", "-k", parser=parse_int, help="Experts per token (1 = Switch).", rich_help_panel=_MOE)] = (
        FFN_DEFAULTS.top_k
    )
    shared_experts: Annotated[
        int, typer.Option("--shared-experts", parser=parse_int, help="Always-on shared experts (DeepSeek-MoE).", rich_help_panel=_MOE)
    ] = FFN_DEFAULTS.shared_experts
    expert_variant: Annotated[
        str, typer.Option("--expert-variant", help="Variant of each expert.", rich_help_panel=_MOE, autocompletion=complete_expert_variants)
    ] = FFN_DEFAULTS.expert_variant
    capacity_factor: Annotated[
        float | None,
        typer.Option(
            "--capacity-factor", parser=parse_float, help="Expert capacity factor; overflow tokens are dropped.", rich_help_panel=_MOE
        ),
    ] = FFN_DEFAULTS.capacity_factor
    normalize_top_k: Annotated[
        bool, typer.Option("--normalize-top-k/--no-normalize-top-k", help="Renormalise the top-k weights (Mixtral).", rich_help_panel=_MOE)
    ] = FFN_DEFAULTS.normalize_top_k
    given: frozenset[str] = frozenset()

    def variants(self) -> list[str]:
        """'relu, swiglu' → ['relu', 'swiglu']; 'all' → every registry variant."""
        if not self.variant.replace(",", "").strip():
            raise FFNError(
                "variant", self.variant, _("choose from {variants}, a comma list of them, or all").format(variants=", ".join(VARIANTS))
            )
        names = [name.lower() for name in parse_list("variant", self.variant)]  # SwiGLU is swiglu
        if names == ["all"]:
            return list(VARIANTS)
        for name in names:
            if name not in VARIANTS:
                every = _("; all alone takes every one")
                raise unknown_name("variant", name, list(VARIANTS), what=N_("variant"), listed_by="ffn variants", extra=every)
        return names

    def widths(self) -> list[int]:
        return parse_int_list("d_model", self.d_model)

    def spec(self, variant: str, d_model: int, **changes: Any) -> FFNSpec:
        """One FFNSpec from these options (FFNSpec validates); `changes` replace spec fields."""
        values = {_FIELDS.get(f.name, f.name): getattr(self, f.name) for f in fields(self) if f.name not in ("given", "variant", "d_model")}
        values["expert_variant"] = self.expert_variant.strip().lower()
        return FFNSpec(**{**values, "variant": variant, "d_model": d_model, **changes})

    def specs(self, **changes: Any) -> list[FFNSpec]:
        """Every variant at every width, variants outermost."""
        specs = [self.spec(v, d, **changes) for v in self.variants() for d in self.widths()]
        self.check_used(specs)
        return specs

    def check_used(self, specs: list[FFNSpec]) -> None:
        """Refuse an option the user typed that none of `specs`' variants reads (each variant
        declares the options it uses): `-v relu --top-k 3` would otherwise run and ignore it."""
        spec_fields = {f.name for f in fields(FFNSpec)}
        for name in sorted(self.given):
            field = _FIELDS.get(name, name)
            if field not in spec_fields or any(field in s.info.options_used(s) for s in specs):
                continue
            chosen = ", ".join(dict.fromkeys(s.variant for s in specs))
            users = [v for v, variant in VARIANTS.items() if field in variant.own_options]
            raise FFNError(
                name,
                getattr(self, name),
                _("{chosen} does not use it (it applies to {users})").format(chosen=chosen, users=", ".join(users)),
            )

    def one_spec(self, why: str, **changes: Any) -> FFNSpec:
        """The single FFN these options describe; a comma list is refused with `why`."""
        variants, widths = self.variants(), self.widths()
        if len(variants) > 1:
            raise FFNError("variant", self.variant, why)
        if len(widths) > 1:
            raise FFNError("d_model", self.d_model, why)
        spec = self.spec(variants[0], widths[0], **changes)
        self.check_used([spec])
        return spec

    def typed(self, names: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The options the user typed (among `names`, if given), with their values."""
        return {name: getattr(self, name) for name in sorted(self.given) if names is None or name in names}

    def refuse(self, names: tuple[str, ...], why: str, *, unless_default: bool = False) -> None:
        """Refuse the first of `names` that was typed (and, with unless_default, set to other
        than its default): the chosen path would ignore it."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in names and f.name in self.given and not (unless_default and value == f.default):
                raise FFNError(f.name, value, why)
