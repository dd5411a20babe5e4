"""Option declarations shared by every command, so one name means one thing everywhere."""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any

import typer

from ffn_cli.cli.complete import complete_devices, complete_dtypes, complete_variants
from ffn_cli.spec import INIT_SCHEMES, FFNSpec
from ffn_cli.variants import variant_names

__all__ = [
    "FFN_DEFAULTS",
    "VARIANT_HELP",
    "BatchOpt",
    "BiasOpt",
    "CapacityFactorOpt",
    "DFFOpt",
    "DModelOpt",
    "DTypeOpt",
    "DeviceOpt",
    "DropoutOpt",
    "ExpertVariantOpt",
    "ExpertsOpt",
    "FfnDimMultiplierOpt",
    "FusedOpt",
    "HeadDimOpt",
    "InitOpt",
    "JsonOpt",
    "MultipleOfOpt",
    "NHeadsOpt",
    "NKVHeadsOpt",
    "NormalizeTopKOpt",
    "SeedOpt",
    "SeqLenOpt",
    "SharedExpertsOpt",
    "SparsityOpt",
    "TopKOpt",
    "ZeroInitOutputOpt",
    "make_spec",
]

_FFN = "FFN"


class _FFNDefaults:
    """FFNSpec's field defaults, read from the dataclass: every command's FFN options default to
    these, so a default lives in FFNSpec alone."""

    def __init__(self) -> None:
        for f in fields(FFNSpec):
            setattr(self, f.name, f.default)


FFN_DEFAULTS: Any = _FFNDefaults()
_MOE = "Mixture of experts"


VARIANT_HELP = "FFN variant: " + ", ".join(variant_names()) + "."

DModelOpt = Annotated[int, typer.Option("--d-model", "-d", help="Model width d_model.", rich_help_panel=_FFN)]
DFFOpt = Annotated[
    int | None,
    typer.Option("--d-ff", help="Hidden width d_ff (default: 4·d, or LLaMA's 2/3 rule for gated variants).", rich_help_panel=_FFN),
]
BiasOpt = Annotated[
    bool | None,
    typer.Option("--bias/--no-bias", help="Biases on the projections (default: the variant's).", rich_help_panel=_FFN, show_default=False),
]
DropoutOpt = Annotated[float, typer.Option("--dropout", help="Dropout after the activation, in [0, 1).", rich_help_panel=_FFN)]
InitOpt = Annotated[str, typer.Option("--init", help="Weight init: " + ", ".join(INIT_SCHEMES) + ".", rich_help_panel=_FFN)]
ZeroInitOutputOpt = Annotated[
    bool, typer.Option("--zero-init-output", help="Start down_proj at zero (the block starts as its residual).", rich_help_panel=_FFN)
]
MultipleOfOpt = Annotated[int, typer.Option("--multiple-of", help="Round the gated d_ff up to this multiple.", rich_help_panel=_FFN)]
FfnDimMultiplierOpt = Annotated[
    float | None, typer.Option("--ffn-dim-multiplier", help="LLaMA's multiplier on the 2/3 rule.", rich_help_panel=_FFN)
]
FusedOpt = Annotated[bool, typer.Option("--fused/--no-fused", help="One fused gate_up_proj for gated variants.", rich_help_panel=_FFN)]
SparsityOpt = Annotated[float, typer.Option("--sparsity", help="Fraction of hidden units masked (sparse).", rich_help_panel=_FFN)]

ExpertsOpt = Annotated[int, typer.Option("--experts", "-E", help="Number of routed experts.", rich_help_panel=_MOE)]
TopKOpt = Annotated[int, typer.Option("--top-k", "-k", help="Experts per token (1 = Switch).", rich_help_panel=_MOE)]
SharedExpertsOpt = Annotated[int, typer.Option("--shared-experts", help="Always-on shared experts (DeepSeek-MoE).", rich_help_panel=_MOE)]
ExpertVariantOpt = Annotated[
    str, typer.Option("--expert-variant", help="Variant of each expert.", rich_help_panel=_MOE, autocompletion=complete_variants)
]
CapacityFactorOpt = Annotated[
    float | None, typer.Option("--capacity-factor", help="Expert capacity factor; overflow tokens are dropped.", rich_help_panel=_MOE)
]
NormalizeTopKOpt = Annotated[
    bool, typer.Option("--normalize-top-k/--no-normalize-top-k", help="Renormalise the top-k weights (Mixtral).", rich_help_panel=_MOE)
]

BatchOpt = Annotated[int, typer.Option("--batch", "-b", help="Batch size.")]
SeqLenOpt = Annotated[int, typer.Option("--seq-len", "-s", help="Sequence length.")]
DeviceOpt = Annotated[str, typer.Option("--device", help="cpu, cuda, cuda:N or meta.", autocompletion=complete_devices)]
DTypeOpt = Annotated[str, typer.Option("--dtype", help="float32, float64, float16 or bfloat16.", autocompletion=complete_dtypes)]
SeedOpt = Annotated[int, typer.Option("--seed", help="Random seed for weights and input.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]

_ATTN = "Attention"
NHeadsOpt = Annotated[int | None, typer.Option("--n-heads", help="Attention heads (default: d_model/64).", rich_help_panel=_ATTN)]
NKVHeadsOpt = Annotated[int | None, typer.Option("--n-kv-heads", help="Key/value heads (grouped-query).", rich_help_panel=_ATTN)]
HeadDimOpt = Annotated[int | None, typer.Option("--head-dim", help="Per-head width (default: d_model/heads).", rich_help_panel=_ATTN)]


def make_spec(
    variant: str,
    d_model: int,
    d_ff: int | None = None,
    *,
    bias: bool | None = FFN_DEFAULTS.bias,
    dropout: float = FFN_DEFAULTS.dropout,
    init: str = FFN_DEFAULTS.init,
    zero_init_output: bool = FFN_DEFAULTS.zero_init_output,
    multiple_of: int = FFN_DEFAULTS.multiple_of,
    ffn_dim_multiplier: float | None = FFN_DEFAULTS.ffn_dim_multiplier,
    fused: bool = FFN_DEFAULTS.fused_gate_up,
    experts: int = FFN_DEFAULTS.experts,
    top_k: int = FFN_DEFAULTS.top_k,
    shared_experts: int = FFN_DEFAULTS.shared_experts,
    expert_variant: str = FFN_DEFAULTS.expert_variant,
    capacity_factor: float | None = FFN_DEFAULTS.capacity_factor,
    normalize_top_k: bool = FFN_DEFAULTS.normalize_top_k,
    sparsity: float = FFN_DEFAULTS.sparsity,
) -> FFNSpec:
    """One FFNSpec from the shared options (validation happens in FFNSpec)."""
    return FFNSpec(
        variant=variant.strip(),
        d_model=d_model,
        d_ff=d_ff,
        bias=bias,
        dropout=dropout,
        init=init,
        zero_init_output=zero_init_output,
        multiple_of=multiple_of,
        ffn_dim_multiplier=ffn_dim_multiplier,
        fused_gate_up=fused,
        experts=experts,
        top_k=top_k,
        shared_experts=shared_experts,
        expert_variant=expert_variant,
        capacity_factor=capacity_factor,
        normalize_top_k=normalize_top_k,
        sparsity=sparsity,
    )


AttnBiasOpt = Annotated[
    bool | None,
    typer.Option(
        "--attn-bias/--no-attn-bias", help="Biases on q, k, v, o (default: as the FFN's).", rich_help_panel=_ATTN, show_default=False
    ),
]


# --- comma lists: several values of one option make a sweep -------------------------------

VariantListOpt = Annotated[
    str, typer.Option("--variant", "-v", help=VARIANT_HELP + " A comma list makes a sweep.", autocompletion=complete_variants)
]
DModelListOpt = Annotated[
    str, typer.Option("--d-model", "-d", help="Model width d_model; a comma list makes a sweep.", rich_help_panel=_FFN)
]
SeqLenListOpt = Annotated[str, typer.Option("--seq-len", "-s", help="Sequence length; a comma list makes a sweep.")]
DTypeListOpt = Annotated[
    str, typer.Option("--dtype", help="float32, float64, float16 or bfloat16; a comma list makes a sweep.", autocompletion=complete_dtypes)
]


def parse_list(option: str, text: str) -> list[str]:
    """'a, b,a' → ['a', 'b']: stripped, de-duplicated, order kept; empty is refused."""
    from ffn_cli.errors import FFNError

    items = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if not items:
        raise FFNError(option, text, "one value or a comma list")
    return items


def parse_int_list(option: str, text: str) -> list[int]:
    """'512,1024' → [512, 1024], each checked as that option's integer."""
    from ffn_cli.errors import FFNError
    from ffn_cli.spec import check_int

    values = []
    for item in parse_list(option, text):
        # isdigit() alone accepts '²', which int() refuses; no size has 20 digits, and int()
        # refuses 4,300 with an error of its own.
        if not (item.isascii() and item.isdigit()):
            raise FFNError(option, text, "an integer or a comma list of integers")
        if len(item) > 19:
            raise FFNError(option, f"{item[:10]}…({len(item)} digits)", "far too large for a size")
        values.append(check_int(option, int(item)))
    return values


# --- running a module: train/eval mode and the Transformer block around the FFN ----------------

ModeOpt = Annotated[str, typer.Option("--mode", help="eval (dropout off) or train (dropout on).")]
NormOpt = Annotated[str, typer.Option("--norm", help="Block norm: layernorm or rmsnorm.", rich_help_panel=_ATTN)]
PreNormOpt = Annotated[
    bool, typer.Option("--pre-norm/--post-norm", help="x + f(norm(x)) (GPT-2, LLaMA) instead of norm(x + f(x)).", rich_help_panel=_ATTN)
]


# --- parallelism: how many ranks share one FFN ---------------------------------------------------

_PAR = "Parallelism"
TPOpt = Annotated[int, typer.Option("--tp", help="Tensor-parallel ranks: d_ff split across N (Megatron).", rich_help_panel=_PAR)]
EPOpt = Annotated[int, typer.Option("--ep", help="Expert-parallel ranks: experts split across N (moe).", rich_help_panel=_PAR)]
