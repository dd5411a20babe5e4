"""A compressed-tensors `quantization_config` (llm-compressor's checkpoints: RedHat's FP8-dynamic,
W4A16, W8A8, NVFP4) read into a weight format and the modules it covers.

One config group targeting `Linear` is read. What each quantized linear stores, as
compressed-tensors' compressors write it (pack_quantized.py, base.py):
- `float-quantized` FP8: e4m3 elements, `weight_scale` per tensor, per output channel or per
  block, in the model's dtype; `input_scale` once per tensor when activations are static.
- `pack-quantized` intN: N-bit integers packed in int32, `weight_scale` per group or channel in
  the model's dtype, `weight_zero_point` (N bits each) when asymmetric, `weight_g_idx` (one int32
  per input column) with activation ordering, and `weight_shape`, two int64 per tensor.
- `int-quantized` int8: int8 elements, scales as above, an int8 zero point when asymmetric.
- `nvfp4-pack-quantized`: e2m1, an e4m3 `weight_scale` per 16, `weight_global_scale` and, when
  activations are quantized, `input_global_scale`, float32, once per tensor.
`ignore` names the modules left as they are (`lm_head`, `re:.*mlp.gate$`). Pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ffn_cli.errors import FFNError
from ffn_cli.hardware.formats import SCALE_BITS, WeightFormat
from ffn_cli.i18n import N_, Message, _

__all__ = ["compressed_tensors_format"]

_SCALE = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
_SHAPE_BITS = 2 * 64  # weight_shape: torch.tensor(weight.shape), int64


def _group(qc: Mapping[str, Any]) -> Mapping[str, Any] | str:
    groups = qc.get("config_groups")
    if not isinstance(groups, Mapping) or len(groups) != 1:
        return Message(N_("quantization_config compressed-tensors with other than one config group is not read"))
    ((name, group),) = groups.items()
    if not isinstance(group, Mapping) or "Linear" not in (group.get("targets") or []):
        return Message(N_("quantization_config compressed-tensors group not targeting Linear is not read"))
    for key in ("weights", "input_activations"):
        value = group.get(key)
        if value is not None and not isinstance(value, Mapping):
            allowed = _('must be a JSON object, as {"type": "float", "num_bits": 8, "strategy": "channel"}')
            raise FFNError(f"quantization_config.config_groups.{name}.{key}", value, allowed)
    return group


def compressed_tensors_format(qc: Mapping[str, Any], model_dtype: str) -> WeightFormat | str:
    """The format one compressed-tensors config group stores its Linear weights in, or why not read."""
    group = _group(qc)
    if isinstance(group, str):
        return group
    w: Mapping[str, Any] = group.get("weights") or {}
    act = group.get("input_activations")
    kind, strategy = w.get("type"), w.get("strategy")
    bits: Any = w.get("num_bits")  # a JSON value: what it must be is checked below
    fmt_name = str(qc.get("format", ""))
    scale = _SCALE.get(model_dtype, "bf16")
    static_input = isinstance(act, Mapping) and not act.get("dynamic", False)
    activations = isinstance(act, Mapping)
    said = N_("quantization_config compressed-tensors {format} ({kind} {bits}-bit, {strategy}) is not read")
    unread = Message(said, format=fmt_name, kind=kind, bits=bits, strategy=strategy)
    if fmt_name == "nvfp4-pack-quantized" and kind == "float" and bits == 4 and w.get("group_size") == 16:
        both = N_("fp32 weight_global_scale and input_global_scale per tensor")
        global_scales = Message(both if activations else N_("fp32 weight_global_scale per tensor"))
        return WeightFormat(
            "ct-nvfp4", 4, "e2m1", group=16, scale="e4m3", tensor_scale_bits=32 * (2 if activations else 1),
            compute_dtype="fp4" if activations else "", tensor_words=global_scales,
        )  # fmt: skip
    per_tensor = SCALE_BITS[scale] if static_input else 0  # input_scale
    words: list[Message] = [Message(N_("a {scale} input_scale"), scale=scale)] if static_input else []
    layout: dict[str, Any] = {}
    if strategy == "group" and isinstance(w.get("group_size"), int) and w["group_size"] > 0:
        layout = {"group": w["group_size"]}
    elif strategy == "channel":
        layout = {"per_row": True}
    elif strategy == "block" and isinstance(w.get("block_structure"), list) and len(w["block_structure"]) == 2:
        layout = {"block": tuple(w["block_structure"])}
    elif strategy == "tensor":
        per_tensor += SCALE_BITS[scale]
        words.insert(0, Message(N_("a {scale} weight_scale"), scale=scale))
    else:
        return unread
    asymmetric = not w.get("symmetric", True)
    zero = bits if asymmetric and ("group" in layout or "per_row" in layout) else 0
    if kind == "float" and bits == 8 and fmt_name in ("float-quantized", "naive-quantized"):
        name, element, compute = "ct-fp8", "e4m3", "fp8" if activations else ""
    elif kind == "int" and bits in (4, 8) and fmt_name == "pack-quantized":
        name, element, compute = f"ct-w{bits}a16", f"int{bits}", ""
        per_tensor += _SHAPE_BITS
        words.append(Message(N_("two int64 of weight_shape")))
    elif kind == "int" and bits == 8 and fmt_name == "int-quantized":
        name, element, compute = "ct-int8", "int8", "int8" if activations else ""
    else:
        return unread
    g_idx = 32 if w.get("actorder") in ("group", "weight") and "group" in layout else 0
    return WeightFormat(
        f"{name}-{strategy}" + (f"{layout['group']}" if "group" in layout else ""),
        bits,
        element,
        **layout,
        scale=scale,
        tensor_scale_bits=per_tensor,
        compute_dtype=compute,
        zero_bits=zero,
        column_index_bits=g_idx,
        tensor_words=_per_tensor(words) if per_tensor else "",
    )


def _per_tensor(words: list[Message]) -> Message:
    """'a bf16 weight_scale and two int64 of weight_shape per tensor', in the reader's language."""
    listed = Message.join(words[0], *[Message(N_(" and {what}"), what=w) for w in words[1:]])
    return Message(N_("{what} per tensor"), what=listed)
