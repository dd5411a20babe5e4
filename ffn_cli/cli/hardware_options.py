"""Options for what a model costs on real hardware: --gpu (a row of ffn_cli/hardware's table),
and turning their text into table rows, with did-you-mean on a wrong name."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = [
    "BatchListOpt",
    "GPUOpt",
    "NoMTPOpt",
    "PhaseOpt",
    "QuantizeOpt",
    "RooflineBackwardOpt",
    "RooflinePlotOpt",
    "TokensOpt",
    "WeightsOpt",
]

_HARDWARE = "Hardware"

GPUOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu",
        help="A GPU of `ffn hardware` (h100, h200, b200, mi300x, …): its dense peak and bandwidth.",
        rich_help_panel=_HARDWARE,
        show_default=False,
    ),
]


WeightsOpt = Annotated[
    str | None,
    typer.Option(
        "--weights",
        help="Storage format of the weights: fp32, bf16, fp16, fp8, fp8-block, int8, int4[-gN][-SCALE], mxfp4, mxfp8, nvfp4 "
        "(default: the checkpoint's quantization_config, else --dtype).",
        rich_help_panel=_HARDWARE,
        show_default=False,
    ),
]
NoMTPOpt = Annotated[
    bool,
    typer.Option(
        "--no-mtp",
        help="Leave out the multi-token-prediction layers the checkpoint ships (serving may drop them).",
        rich_help_panel=_HARDWARE,
    ),
]
QuantizeOpt = Annotated[
    str | None,
    typer.Option(
        "--quantize",
        help="Which tensors --weights stores: experts, ffn, linears or all (default: what the config's "
        "quantization_config quantizes, else linears for a quantized format).",
        rich_help_panel=_HARDWARE,
        show_default=False,
    ),
]
PhaseOpt = Annotated[
    str,
    typer.Option(
        "--phase", help="With --gpu: prefill (batch × seq-len tokens) or decode (one token per sequence).", rich_help_panel=_HARDWARE
    ),
]
BatchListOpt = Annotated[
    str | None,
    typer.Option("--batch", "-b", help="With --gpu: sequences in the pass; a comma list sweeps (1,8,64,512).", rich_help_panel=_HARDWARE),
]
TokensOpt = Annotated[
    int | None,
    typer.Option(
        "--tokens", help="With --gpu: tokens in the pass (prefill: one sequence of T; decode: T sequences).", rich_help_panel=_HARDWARE
    ),
]
RooflineBackwardOpt = Annotated[
    bool,
    typer.Option(
        "--backward",
        help="With --gpu: also the backward of a training step (prefill): 2× the matmul FLOPs, the weights read again, "
        "their gradients written, the saved activations read.",
        rich_help_panel=_HARDWARE,
    ),
]
RooflinePlotOpt = Annotated[
    str | None,
    typer.Option(
        "--plot",
        help="With --gpu and a --batch list: also draw the time bound and the attainable TFLOP/s against batch to "
        "FILE.png (.svg, .pdf); needs matplotlib.",
        rich_help_panel=_HARDWARE,
        show_default=False,
    ),
]
