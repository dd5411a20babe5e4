"""Weight storage formats: how many bits a weight matrix takes, its scales included.

A format stores each element in `element_bits` and, for quantized formats, one scale per
group of weights: a group of `group` consecutive weights along a row (the input dimension of
an (out, in) weight, as MXFP4, NVFP4 and GPTQ-style int4 group them), or a `block` of
rows × columns (DeepSeek-V3's 128×128 FP8 blocks), or one scale per row (`per_row`), plus
`tensor_scale_bits` once per tensor (NVFP4's and per-tensor FP8's float32 scale). Exact: a
group that does not fill gets its own scale too (the ceiling), as the checkpoints store them.

Asymmetric integer formats store a zero point beside each scale (`zero_bits`): AWQ packs one
4-bit zero point per group (qzeros), GPTQ one of the weight's own width per group, and GPTQ's
checkpoints also hold `g_idx`, one int32 per input column naming its group
(`column_index_bits`); AutoGPTQ's layout stores qzeros and g_idx whatever `sym` says, and a
bias for every quantized linear, zeros where the model has none (`row_bias_bits`, fp16 per
output row). `tensor_scale_bits` counts what a tensor stores once: NVFP4's weight_scale_2 and
input_scale (two float32), a static FP8 checkpoint's weight and input scales, compressed-tensors'
weight_shape (two int64).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from math import ceil, prod

from ffn_cli.i18n import N_, Message

__all__ = ["FORMATS", "TABLE_FORMATS", "WeightFormat", "awq", "gptq", "parse_format"]

SCALE_BITS = {"bf16": 16, "fp16": 16, "fp32": 32, "e8m0": 8, "e4m3": 8}


@dataclass(frozen=True)
class WeightFormat:
    name: str
    element_bits: int
    element: str  # the element's own type: bf16, e4m3, e2m1, int4, …
    group: int = 0  # one scale per `group` weights along a row; 0: none
    block: tuple[int, int] | None = None  # one scale per rows × cols block
    per_row: bool = False  # one scale per output row
    scale: str = ""  # the scale's type (a key of SCALE_BITS)
    tensor_scale_bits: int = 0  # once per tensor
    compute_dtype: str = ""  # the matmul dtype its rate is read at in the GPU table
    zero_bits: int = 0  # a zero point beside each group/row scale (asymmetric integers)
    column_index_bits: int = 0  # once per input column of each matrix (GPTQ's int32 g_idx)
    row_bias_bits: int = 0  # once per output row of each matrix (AutoGPTQ's fp16 bias, zeros or not)
    tensor_words: str = ""  # what tensor_scale_bits holds, in words (a Message), where not one fp32 scale

    @property
    def scale_bits(self) -> int:
        return SCALE_BITS[self.scale] if self.scale else 0

    @property
    def quantized(self) -> bool:
        return bool(self.scale or self.tensor_scale_bits)

    def scales(self, shape: tuple[int, ...]) -> int:
        """How many group/block/row scales a tensor of `shape` carries (not the per-tensor one)."""
        rows, cols = (prod(shape[:-1]), shape[-1]) if len(shape) > 1 else (1, prod(shape))  # a scalar (VibeVoice's): 1 × 1
        if self.group:
            return rows * ceil(cols / self.group)
        if self.block is not None:
            return ceil(rows / self.block[0]) * ceil(cols / self.block[1])
        return rows if self.per_row else 0

    def tensor_bits(self, shape: tuple[int, ...]) -> int:
        """Bits to store one tensor of `shape` in this format, every scale and zero point included."""
        columns = prod(shape[:-2]) * shape[-1] if len(shape) > 1 else 0  # each matrix's input columns
        rows = prod(shape[:-1]) if len(shape) > 1 else 0
        return (
            prod(shape) * self.element_bits
            + self.scales(shape) * (self.scale_bits + self.zero_bits)
            + self.tensor_scale_bits
            + columns * self.column_index_bits
            + rows * self.row_bias_bits
        )

    def bits_per_weight(self, shape: tuple[int, ...] | None = None) -> Fraction:
        """Exact bits per weight: of a tensor of `shape`, or of an unbounded one (full groups, no
        per-tensor or per-column share)."""
        if shape is not None:
            return Fraction(self.tensor_bits(shape), prod(shape))
        per_group = self.group or (self.block[0] * self.block[1] if self.block else 0)
        return Fraction(self.element_bits) + (Fraction(self.scale_bits + self.zero_bits, per_group) if per_group else 0)

    def describe(self) -> Message:
        """In words, e.g. 'mxfp4: e2m1 + an e8m0 scale per 32 = 4.25 bits/weight'."""
        parts: list[str] = [self.element]
        if self.group:
            what = (
                N_("one {scale} scale and one int{zero} zero point per {group}") if self.zero_bits else N_("one {scale} scale per {group}")
            )
            parts.append(Message(what, group=self.group, scale=self.scale, zero=self.zero_bits))
        elif self.block is not None:
            what = (
                N_("one {scale} scale and one int{zero} zero point per {rows}×{cols} block")
                if self.zero_bits
                else N_("one {scale} scale per {rows}×{cols} block")
            )
            parts.append(Message(what, rows=self.block[0], cols=self.block[1], scale=self.scale, zero=self.zero_bits))
        elif self.per_row:
            what = N_("one {scale} scale and one int{zero} zero point per row") if self.zero_bits else N_("one {scale} scale per row")
            parts.append(Message(what, scale=self.scale, zero=self.zero_bits))
        if self.tensor_scale_bits:
            parts.append(self.tensor_words or Message(N_("one fp32 scale per tensor")))
        if self.column_index_bits:
            parts.append(Message(N_("one int{bits} group index per input column"), bits=self.column_index_bits))
        if self.row_bias_bits:
            parts.append(Message(N_("a {bits}-bit bias per output row"), bits=self.row_bias_bits))
        tails = [
            Message(what)
            for what, there in (
                (N_("the per-row scales"), self.per_row),
                (N_("the group indices"), self.column_index_bits),
                (N_("the biases"), self.row_bias_bits),
            )
            if there
        ]
        joined = Message.join(*[piece for i, part in enumerate(parts) for piece in ((" + " if i else ""), part)])
        bits = f"{float(self.bits_per_weight()):.6g}"
        if parts == [self.name]:  # a plain float: its name is its whole layout (bf16: 16 bits/weight)
            return Message(N_("{name}: {bits} bits/weight"), name=self.name, bits=bits)
        said = Message(N_("{name}: {layout} = {bits} bits/weight"), name=self.name, layout=joined, bits=bits)
        if not tails:
            return said
        listed = Message.join(tails[0], *[Message(N_(" and {what}"), what=t) for t in tails[1:]])
        return Message.join(said, Message(N_(" (+ {what})"), what=listed))


def _int(bits: int, group: int, scale: str, *, asym: bool = False) -> WeightFormat:
    name = f"int{bits}" + (f"-g{group}" if group else "") + f"-{scale}" + ("-asym" if asym else "")
    return WeightFormat(
        name,
        bits,
        f"int{bits}",
        group=group,
        per_row=not group,
        scale=scale,
        compute_dtype=f"int{bits}" if bits == 8 else "",
        zero_bits=bits if asym else 0,
    )


def gptq(bits: int, group: int, *, zero_biases: bool = True) -> WeightFormat:
    """GPTQ as AutoGPTQ stores it: `bits`-bit weights packed in int32, per group (group ≤ 0: per
    row) one fp16 scale and one `bits`-bit zero point (qzeros, stored whatever `sym` says),
    g_idx, one int32 per input column, and an fp16 bias per output row (zeros for an unbiased
    linear; GPTQModel's checkpoints leave them out: `zero_biases=False`)."""
    name = f"gptq-int{bits}" + (f"-g{group}" if group > 0 else "")
    fmt = _int(bits, max(group, 0), "fp16", asym=True)
    return WeightFormat(
        name,
        bits,
        fmt.element,
        group=fmt.group,
        per_row=fmt.per_row,
        scale="fp16",
        compute_dtype=fmt.compute_dtype,
        zero_bits=bits,
        column_index_bits=32,
        row_bias_bits=16 if zero_biases else 0,
    )


def awq(group: int) -> WeightFormat:
    """AWQ (AutoAWQ's GEMM layout): int4 weights, per group one fp16 scale and one 4-bit zero point."""
    fmt = _int(4, group, "fp16", asym=True)
    return WeightFormat(f"awq-int4-g{group}", 4, "int4", group=group, scale="fp16", compute_dtype=fmt.compute_dtype, zero_bits=4)


FORMATS: dict[str, WeightFormat] = {
    "fp32": WeightFormat("fp32", 32, "fp32", compute_dtype="fp32"),
    "bf16": WeightFormat("bf16", 16, "bf16", compute_dtype="bf16"),
    "fp16": WeightFormat("fp16", 16, "fp16", compute_dtype="fp16"),
    "fp8": WeightFormat("fp8", 8, "e4m3", tensor_scale_bits=32, compute_dtype="fp8"),
    "fp8-block": WeightFormat("fp8-block", 8, "e4m3", block=(128, 128), scale="fp32", compute_dtype="fp8"),
    "int8": _int(8, 0, "bf16"),
    "int4": _int(4, 128, "bf16"),
    "mxfp4": WeightFormat("mxfp4", 4, "e2m1", group=32, scale="e8m0", compute_dtype="fp4"),
    "mxfp8": WeightFormat("mxfp8", 8, "e4m3", group=32, scale="e8m0", compute_dtype="fp8"),
    "nvfp4": WeightFormat(
        "nvfp4",
        4,
        "e2m1",
        group=16,
        scale="e4m3",
        tensor_scale_bits=64,
        compute_dtype="fp4",
        tensor_words=Message(N_("two fp32 per tensor (weight_scale_2, input_scale)")),
    ),
}

# What a checkpoint stores beside its weights in a fixed type, which --weights never takes:
# DeepSeek-V4's hash-routing tables (token id → experts, int32).
TABLE_FORMATS: dict[str, WeightFormat] = {"int32": WeightFormat("int32", 32, "int32")}
ALIASES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float8": "fp8", "fp8-e4m3": "fp8", "e4m3": "fp8"}
SYNTAX = Message(
    N_("{formats} (SCALE: {scales}; -asym: a zero point per group; B: {bits})"),
    formats="fp32, bf16, fp16, fp8, fp8-block[-N], int8[-gN][-SCALE][-asym], int4[-gN][-SCALE][-asym], gptq-intB[-gN], "
    "awq-int4[-gN], mxfp4, mxfp8, nvfp4",
    scales="bf16, fp16, fp32",
    bits="2, 3, 4, 8",
)


def parse_format(text: str) -> WeightFormat:
    """'int4-g64-fp16' → int4 with one fp16 scale per 64 weights; ValueError on anything else."""
    t = ALIASES.get(text.strip().lower(), text.strip().lower())
    if t in FORMATS:
        return FORMATS[t]
    m = re.fullmatch(r"fp8-block-(\d+)", t)
    if m and int(m.group(1)) > 0:
        n = int(m.group(1))
        return WeightFormat(f"fp8-block-{n}", 8, "e4m3", block=(n, n), scale="fp32", compute_dtype="fp8")
    m = re.fullmatch(r"int(4|8)(?:-g(\d+))?(?:-(bf16|fp16|fp32))?(-asym)?", t)
    if m and (m.group(2) is None or int(m.group(2)) > 0):
        bits = int(m.group(1))
        group = int(m.group(2)) if m.group(2) else (128 if bits == 4 else 0)
        return _int(bits, group, m.group(3) or "bf16", asym=m.group(4) is not None)
    m = re.fullmatch(r"gptq-int(2|3|4|8)(?:-g(\d+))?", t)
    if m and (m.group(2) is None or int(m.group(2)) > 0):
        return gptq(int(m.group(1)), int(m.group(2)) if m.group(2) else 128)
    m = re.fullmatch(r"awq-int4(?:-g(\d+))?", t)
    if m and (m.group(1) is None or int(m.group(1)) > 0):
        return awq(int(m.group(1)) if m.group(1) else 128)
    raise ValueError(f"choose {SYNTAX}")
