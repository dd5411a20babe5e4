"""Token mixers that are not softmax attention, for the layers of a hybrid that use them.

Qwen3-Next mixes tokens in three of every four layers with a Gated DeltaNet (Yang et al. 2024):
a linear attention whose state (one key-width × value-width matrix per value head) is updated
once per token, so its cost per token does not grow with the context. LFM2 mixes most of its
layers with a short convolution: a gated depthwise causal convolution over a few tokens.
Granite-4.0-H mixes most of its layers with Mamba-2 (Dao & Gu 2024), Nemotron-H about half: a
selective state space whose state (one head-width × state-size matrix per head) is updated once
per token. Their parameters, and the FLOPs of their projections per token, are a handful of
widths. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass

from ffn_cli.accounting import ParamTensor
from ffn_cli.i18n import N_, Message
from ffn_cli.spec import check_int

__all__ = ["LinearMixer", "gated_delta_net", "mamba2", "short_conv"]


@dataclass(frozen=True)
class LinearMixer:
    """One kind of mixer, and the layers that use it in place of attention.

    `tensors` are one layer's parameters but its norms, `norm_tensors` its norms (counted with
    the norms, as the module types sort them); `projection_flops` the forward matmul FLOPs per
    token of its Linear projections; `state_bytes_per_layer` what decoding keeps per sequence,
    in elements (the recurrent state and the convolution's window); `conv_flops` the FLOPs per
    token of its depthwise convolution (2 · channels · kernel; no matmul, so apart from
    `projection_flops`), the same at any sequence length."""

    kind: str
    detail: str
    tensors: tuple[ParamTensor, ...]
    norm_tensors: tuple[ParamTensor, ...]
    projection_flops: int
    state_elements: int
    layers: tuple[int, ...]
    conv_flops: int = 0

    @property
    def params(self) -> int:
        return sum(t.count for t in self.tensors)

    @property
    def norm_params(self) -> int:
        return sum(t.count for t in self.norm_tensors)


def gated_delta_net(
    d_model: int, *, key_heads: int, key_dim: int, value_heads: int, value_dim: int, conv_kernel: int, layers: tuple[int, ...]
) -> LinearMixer:
    """transformers' Qwen3NextGatedDeltaNet: in_proj_qkvz (d → 2·K + 2·V), in_proj_ba (d → 2 per
    value head), a depthwise causal conv over q, k, v (2·K + V channels, no bias), dt_bias and
    A_log per value head, a gated RMSNorm over the value head width, out_proj (V → d); K and V
    are the key and value widths over all heads."""
    for name, value in (("linear_num_key_heads", key_heads), ("linear_key_head_dim", key_dim), ("linear_num_value_heads", value_heads)):
        check_int(name, value)
    check_int("linear_value_head_dim", value_dim)
    check_int("linear_conv_kernel_dim", conv_kernel)
    k, v = key_heads * key_dim, value_heads * value_dim
    conv = 2 * k + v
    tensors = (
        ParamTensor("in_proj_qkvz.weight", (2 * k + 2 * v, d_model)),
        ParamTensor("in_proj_ba.weight", (2 * value_heads, d_model)),
        ParamTensor("conv1d.weight", (conv, 1, conv_kernel)),
        ParamTensor("dt_bias", (value_heads,)),
        ParamTensor("A_log", (value_heads,)),
        ParamTensor("out_proj.weight", (d_model, v)),
    )
    flops = 2 * d_model * (2 * k + 2 * v) + 2 * d_model * 2 * value_heads + 2 * v * d_model
    detail = Message(
        N_(
            "{key_heads} key heads × {key_dim}, {value_heads} value heads × {value_dim}, conv {conv}; "
            "state per token O(1), no scores over the keys"
        ),
        key_heads=key_heads,
        key_dim=key_dim,
        value_heads=value_heads,
        value_dim=value_dim,
        conv=conv_kernel,
    )
    state = value_heads * key_dim * value_dim + conv * (conv_kernel - 1)
    return LinearMixer("Gated DeltaNet", detail, tensors, (ParamTensor("norm.weight", (value_dim,)),), flops, state, layers)


def short_conv(d_model: int, *, kernel: int, bias: bool, layers: tuple[int, ...]) -> LinearMixer:
    """transformers' Lfm2ShortConv: in_proj (d → 3·d: the gates B and C and the input x), a
    depthwise causal Conv1d over B·x (d channels, `kernel` taps), C times its output, out_proj
    (d → d); conv_bias puts a bias on all three. Nothing in it reads more than `kernel` tokens."""
    check_int("conv_L_cache", kernel)
    tensors = [ParamTensor("in_proj.weight", (3 * d_model, d_model)), ParamTensor("conv.weight", (d_model, 1, kernel))]
    tensors.append(ParamTensor("out_proj.weight", (d_model, d_model)))
    if bias:
        tensors += [ParamTensor(f"{n}.bias", (w,)) for n, w in (("in_proj", 3 * d_model), ("conv", d_model), ("out_proj", d_model))]
    flops = 2 * d_model * 3 * d_model + 2 * d_model * d_model
    biases = Message(N_(", biases")) if bias else ""
    detail = Message(
        N_("in_proj d → 3·d, depthwise conv {kernel} taps, out_proj{biases}; reads the {kernel} latest tokens"),
        kernel=kernel,
        biases=biases,
    )
    state = d_model * (kernel - 1)
    return LinearMixer("short conv", detail, tuple(tensors), (), flops, state, layers, conv_flops=2 * d_model * kernel)


def mamba2(
    d_model: int,
    *,
    heads: int,
    head_dim: int,
    groups: int,
    state: int,
    conv_kernel: int,
    conv_bias: bool,
    proj_bias: bool,
    layers: tuple[int, ...],
) -> LinearMixer:
    """transformers' Mamba-2 mixer (GraniteMoeHybridMambaLayer): in_proj (d → I + C + H: the gate
    z, the conv's input x, B, C and dt), a depthwise causal Conv1d over x, B and C (C = I + 2·G·N
    channels, conv_bias), dt_bias, A_log and D per head, a gated RMSNorm over I, out_proj
    (I → d); proj_bias on both projections. I = heads × head_dim, G groups, N the state size."""
    for key, value in (("mamba_n_heads", heads), ("mamba_d_head", head_dim), ("mamba_n_groups", groups), ("mamba_d_state", state)):
        check_int(key, value)
    check_int("mamba_d_conv", conv_kernel)
    inner = heads * head_dim
    conv = inner + 2 * groups * state
    projection = inner + conv + heads
    tensors = [
        ParamTensor("in_proj.weight", (projection, d_model)),
        ParamTensor("conv1d.weight", (conv, 1, conv_kernel)),
        ParamTensor("dt_bias", (heads,)),
        ParamTensor("A_log", (heads,)),
        ParamTensor("D", (heads,)),
        ParamTensor("out_proj.weight", (d_model, inner)),
    ]
    if conv_bias:
        tensors.append(ParamTensor("conv1d.bias", (conv,)))
    if proj_bias:
        tensors += [ParamTensor("in_proj.bias", (projection,)), ParamTensor("out_proj.bias", (d_model,))]
    flops = 2 * d_model * projection + 2 * inner * d_model
    groups_text = Message(N_("{n} groups") if groups > 1 else N_("{n} group"), n=groups)
    detail = Message(
        N_("{heads} heads × {head_dim}, state {state}, {groups}, conv {conv}; state per token O(1)"),
        heads=heads,
        head_dim=head_dim,
        state=state,
        groups=groups_text,
        conv=conv_kernel,
    )
    state_elements = heads * head_dim * state + conv * (conv_kernel - 1)
    norm = (ParamTensor("norm.weight", (inner,)),)
    return LinearMixer("Mamba-2", detail, tuple(tensors), norm, flops, state_elements, layers, conv_flops=2 * conv * conv_kernel)
