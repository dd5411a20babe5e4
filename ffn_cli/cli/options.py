"""Option declarations shared by the commands, so one name means one thing everywhere; the
FFN's own options are one group, in ffn_options.py."""

from __future__ import annotations

from typing import Annotated

import typer

from ffn_cli.cli.complete import complete_devices, complete_dtypes
from ffn_cli.cli.numbers import parse_float, parse_int
from ffn_cli.names import normalise
from ffn_cli.requests.lists import parse_int_list, parse_int_tuple, parse_list, parse_names, parse_paths, parse_tuple

__all__ = [
    "AttnBiasOpt",
    "BatchOpt",
    "DTypeListOpt",
    "DTypeOpt",
    "DeviceOpt",
    "EPOpt",
    "HeadDimOpt",
    "JsonOpt",
    "ModeOpt",
    "NHeadsOpt",
    "NKVHeadsOpt",
    "NormOpt",
    "PreNormOpt",
    "RankTimeoutOpt",
    "SeedOpt",
    "SeqLenListOpt",
    "SeqLenOpt",
    "TPOpt",
    "as_name",
    "parse_int_list",
    "parse_int_tuple",
    "parse_list",
    "parse_names",
    "parse_paths",
    "parse_tuple",
]


def as_name(value: str | None) -> str | None:
    """A name option's value as it is matched: ' BFloat16 ' is bfloat16, for every such option alike."""

    return None if value is None else normalise(value)


BatchOpt = Annotated[int, typer.Option("--batch", "-b", parser=parse_int, help="Batch size.")]
SeqLenOpt = Annotated[int, typer.Option("--seq-len", "-s", parser=parse_int, help="Sequence length.")]
DeviceOpt = Annotated[str, typer.Option("--device", help="cpu, cuda, cuda:N or meta.", autocompletion=complete_devices, callback=as_name)]
DTypeOpt = Annotated[
    str, typer.Option("--dtype", help="float32, float64, float16 or bfloat16.", autocompletion=complete_dtypes, callback=as_name)
]
SeedOpt = Annotated[int, typer.Option("--seed", parser=parse_int, help="Random seed for weights and input.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]

_ATTN = "Attention"
NHeadsOpt = Annotated[
    int | None, typer.Option("--n-heads", parser=parse_int, help="Attention heads (default: d_model/64).", rich_help_panel=_ATTN)
]
NKVHeadsOpt = Annotated[
    int | None, typer.Option("--n-kv-heads", parser=parse_int, help="Key/value heads (grouped-query).", rich_help_panel=_ATTN)
]
HeadDimOpt = Annotated[
    int | None, typer.Option("--head-dim", parser=parse_int, help="Per-head width (default: d_model/heads).", rich_help_panel=_ATTN)
]


AttnBiasOpt = Annotated[
    bool | None,
    typer.Option(
        "--attn-bias/--no-attn-bias", help="Biases on q, k, v, o (default: as the FFN's).", rich_help_panel=_ATTN, show_default=False
    ),
]


# --- comma lists: several values of one option make a sweep -------------------------------

SeqLenListOpt = Annotated[str, typer.Option("--seq-len", "-s", help="Sequence length; a comma list makes a sweep.")]
DTypeListOpt = Annotated[
    str,
    typer.Option(
        "--dtype",
        help="float32, float64, float16 or bfloat16; a comma list makes a sweep.",
        autocompletion=complete_dtypes,
        callback=as_name,
    ),
]


# --- running a module: train/eval mode and the Transformer block around the FFN ----------------

ModeOpt = Annotated[str, typer.Option("--mode", help="eval (dropout off) or train (dropout on).", callback=as_name)]
NormOpt = Annotated[str, typer.Option("--norm", help="Block norm: layernorm or rmsnorm.", rich_help_panel=_ATTN, callback=as_name)]
PreNormOpt = Annotated[
    bool, typer.Option("--pre-norm/--post-norm", help="x + f(norm(x)) (GPT-2, LLaMA) instead of norm(x + f(x)).", rich_help_panel=_ATTN)
]


# --- parallelism: how many ranks share one FFN ---------------------------------------------------

_PAR = "Parallelism"
TPOpt = Annotated[
    int,
    typer.Option(
        "--tp",
        parser=parse_int,
        help="Tensor-parallel ranks: d_ff split across N (Megatron); a whole model's heads and widths too.",
        rich_help_panel=_PAR,
    ),
]
EPOpt = Annotated[
    int,
    typer.Option(
        "--ep",
        parser=parse_int,
        help="Expert-parallel ranks: experts split across N (moe). A whole model on max(tp, ep) GPUs: past --tp, copies of "
        "the attention share the batch; below it, each expert is cut over tp / ep GPUs.",
        rich_help_panel=_PAR,
    ),
]
RankTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--rank-timeout",
        parser=parse_float,
        metavar="SECONDS",
        help="With --tp / --ep: seconds the ranks may take before they are stopped (default: trace 120, bench 300).",
        rich_help_panel=_PAR,
    ),
]
