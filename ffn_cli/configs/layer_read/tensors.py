"""What one built layer of a kind holds as the spec's pieces (`LayerRead`), and the small helpers
every part's reader uses: counting a module, finding its Linears by name, naming the tensors no
piece of the spec holds, and the refusals (a part the spec cannot reproduce, a layout ffn does not
size)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from transformers import PretrainedConfig

from ffn_cli.accounting import ParamTensor
from ffn_cli.attention import AnyAttention
from ffn_cli.configs.built import Towers
from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.mixers import LinearMixer
from ffn_cli.models.spec import NormKind, layer_ranges
from ffn_cli.spec import FFNSpec

__all__ = [
    "LayerRead",
    "Unread",
    "beyond_ffn",
    "layers_named",
    "linear_named",
    "n_params",
    "named_tensors",
    "param_tensor",
    "positive_ints",
    "rest_of",
    "towers_of",
]


# --- one built layer, read ------------------------------------------------------------------


@dataclass
class LayerRead:
    """What one built layer of a kind holds, as the spec's pieces."""

    layers: tuple[int, ...]
    params: int  # the built layer's own count: each piece below is checked to add up to it
    attention: AnyAttention | None = None
    attention_extra: tuple[ParamTensor, ...] = ()
    mixer: LinearMixer | None = None
    ffn: FFNSpec | None = None
    ffn_extra: tuple[ParamTensor, ...] = ()
    norms: int = 0
    norm: NormKind = "rmsnorm"
    norm_params: int = 0  # one norm's
    norm_names: list[str] = field(default_factory=list)  # the children read as the layer's norms
    other: tuple[ParamTensor, ...] = ()
    other_flops: int = 0  # per token, of `other` beyond its Linear weights (DeepSeek-V4's hyper-connections)
    # Tables a token reads rows of, inside the layer (Qwen4-Exp's PLE n-gram table), and the rows it reads of each.
    tables: tuple[ParamTensor, ...] = ()
    table_lookups: int = 1
    # Elements a convolution among `other` keeps per sequence between tokens (Qwen4-Exp's PLE conv1d).
    other_state: int = 0
    # Experts of another modality beside the text ones (ERNIE 4.5 VL's vision_moe): held, run on image tokens alone.
    image_experts: tuple[ParamTensor, ...] = ()
    image_experts_shape: tuple[int, int] | None = None  # (experts, width) of them
    # A mixture of attention heads (JetMoE's): the query-and-output experts a token does not pick,
    # and (experts, picks); the AttentionSpec holds the picks'.
    attention_experts: tuple[ParamTensor, ...] = ()
    attention_routing: tuple[int, int] = (0, 0)
    window: int | None = None
    index_keys: int | None = None  # a DSA indexer's key, elements a token
    index_heads: int | None = None  # its heads
    index_topk: int | None = None  # the keys its layer's attention then reads
    index_block: int | None = None  # keys averaged into each block its heads score (QSA's compress_ratio)
    index_select_block: int | None = None  # keys of each block its attention reads whole (MiniMax-M3's)
    # Its attention reads every key though it holds an indexer slot left empty (MiniMax-M3's full layers).
    full_read: bool = False
    kv_shared: bool = False  # its attention reads an earlier layer's keys and values, and builds no k/v projections
    zero_experts: int = 0  # zero-computation (identity) experts in its router's pool beside the routed ones
    router_in_extra: bool = False  # its router scores a state of its own width: counted in ffn_extra, no d × E router
    score_bias: bool = False  # its router chooses on scores plus a stored bias buffer (e_score_correction_bias)
    residual_copies: int | None = None  # copies of the residual stream its hyper-connections mix
    # The layer's children that are blocks shared with other layers (Zamba's shared transformer),
    # and its application's own entries in them (Zamba2's LoRA adapters), out of `other`.
    shared_paths: tuple[str, ...] = ()
    adapters: tuple[ParamTensor, ...] = ()
    looped: bool = False  # its layers run again in later passes (Inkling 2 Loop's): every tensor beside its parts is shared
    said: list[Message] = field(default_factory=list)
    left_out: list[Message] = field(default_factory=list)
    flops_left_out: list[Message] = field(default_factory=list)  # work no FLOP count sizes; its state, if any, sized


def towers_of(model: nn.Module) -> Towers:
    """The towers a built model's config describes (none for a module with no transformers config)."""
    config = getattr(model, "config", None)
    return Towers.of(config.to_dict() if isinstance(config, PretrainedConfig) else {})


def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


# Names a projection bears a module further down, found there where one module alone bears it
# (CPM-Ant's gate and input, w_in.w_0 and w_in.w_1); any other name is read where it is given.
_NESTED_NAMES = frozenset({"w_0", "w_1"})


def linear_named(modules: Mapping[str, nn.Module], *names: str) -> nn.Linear | None:
    found = next((modules[n] for n in names if n in modules), None)
    if found is None:
        nested = [m for path, m in modules.items() if path.rpartition(".")[2] in _NESTED_NAMES.intersection(names)]
        found = nested[0] if len(nested) == 1 else None
    return found if isinstance(found, nn.Linear) else None


def named_tensors(prefix: str, module: nn.Module) -> tuple[ParamTensor, ...]:
    """Every tensor of `module`, named from `prefix` as `param_tensor` names them."""
    named = []
    for sub, p in module.named_parameters():
        path, _dot, leaf = sub.rpartition(".")
        named.append(param_tensor(".".join(filter(None, (prefix, path))), leaf, p, module.get_submodule(path)))
    return tuple(named)


def param_tensor(path: str, leaf: str, p: torch.Tensor, module: nn.Module) -> ParamTensor:
    """A tensor no piece of the spec holds, by its name; a Linear's weight keeps `.weight` (its
    matmul is counted), any other tensor is named without it (no matmul: a norm, a scale)."""
    name = f"{path}.{leaf}" if path else leaf
    if not isinstance(module, nn.Linear):
        name = f"{path} ({leaf})" if path else leaf
    return ParamTensor(name, tuple(p.shape))


def rest_of(child: nn.Module, used: set[str]) -> tuple[ParamTensor, ...]:
    """The tensors of `child` under none of the module paths in `used`."""
    modules = dict(child.named_modules())
    rest = []
    for name, p in child.named_parameters():
        path, _dot, leaf = name.rpartition(".")
        if not any(path == u or path.startswith(u + ".") or name == u for u in used):
            rest.append(param_tensor(path, leaf, p, modules[path]))
    return tuple(rest)


def beyond_ffn(source: str, why: str) -> FFNRuntimeError:
    """A config transformers builds whose layout ffn does not size: a limit of the tool (exit 1), not bad input."""
    return FFNRuntimeError(_("{source}: {why}").format(source=source, why=why))


class Unread(Exception):
    """A part whose count the spec cannot reproduce: why, in words (a Message, said in the reader's language)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def layers_named(layers: tuple[int, ...]) -> Message:
    """'layer 0' or 'layers 0-2, 5'."""
    return Message(N_("layer {layers}") if len(layers) == 1 else N_("layers {layers}"), layers=layer_ranges(layers))


def positive_ints(values: list[Any]) -> list[int] | None:
    """`values`, where each is a positive int (a module's sizes, a config's); None where one is not."""
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return ints if len(ints) == len(values) else None
