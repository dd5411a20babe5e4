"""A token mixer other than attention read from its modules: a Gated DeltaNet, Mamba-1 and
Mamba-2, lightning attention, a short convolution, the RG-LRU, RWKV's time mixing, an mLSTM,
another delta rule (their state's widths and dtype); any other counted tensor by tensor; and the
depthwise convolutions beside the layer's attention, kept in float32 where the model says so."""

from __future__ import annotations

import math
from collections.abc import Mapping

import transformers
from torch import nn
from transformers import PretrainedConfig
from transformers.models.auto import modeling_auto

from ffn_cli.configs.attribution import Owner, attribute
from ffn_cli.configs.layer_read.tensors import LayerRead, linear_named, n_params, param_tensor, rest_of
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.mixers import (
    STATE_DTYPE_BYTES,
    DeltaRuleScan,
    ElementwiseScan,
    LightningScan,
    LinearMixer,
    MLSTMScan,
    SelectiveScan,
    gated_delta_net,
    mamba2,
    short_conv,
)

__all__ = ["depthwise_convs", "kept_as", "kept_in_float32", "linear_mixer", "lone_conv", "short_convs"]


def linear_mixer(d: int, child: nn.Module, read: LayerRead) -> None:
    """A Gated DeltaNet or Mamba-2 by its widths; any other mixer tensor by tensor, its state unsized."""
    name, a = type(child).__name__, vars(child)
    mixer: LinearMixer | None = None
    selective = _selective_scan(child)
    if name.endswith("GatedDeltaNet") and all(k in a for k in ("num_k_heads", "head_k_dim", "num_v_heads", "head_v_dim")):
        mixer = gated_delta_net(
            d,
            key_heads=a["num_k_heads"],
            key_dim=a["head_k_dim"],
            value_heads=a["num_v_heads"],
            value_dim=a["head_v_dim"],
            conv_kernel=a["conv_kernel_size"],
            layers=read.layers,
        )
    elif all(k in a for k in ("num_heads", "head_dim", "n_groups", "ssm_state_size", "conv_kernel_size")) and hasattr(child, "A_log"):
        m = dict(child.named_modules())
        conv, proj = m.get("conv1d"), linear_named(m, "in_proj")
        mixer = mamba2(
            d,
            heads=a["num_heads"],
            head_dim=a["head_dim"],
            groups=a["n_groups"],
            state=a["ssm_state_size"],
            conv_kernel=a["conv_kernel_size"],
            conv_bias=getattr(conv, "bias", None) is not None,
            proj_bias=proj is not None and proj.bias is not None,
            layers=read.layers,
            chunk=int(a.get("chunk_size") or 256),
        )
        norm = m.get("norm")
        if norm is None or not n_params(norm):  # no gated norm (Falcon-H1's mamba_rms_norm off)
            mixer = LinearMixer(**{**vars(mixer), "norm_tensors": ()})
    elif "Lightning" in name and all(isinstance(a.get(k), int) for k in ("num_attention_heads", "head_dim", "block_size")):
        # MiniMax's lightning attention: its tensors as built (qkv, output gate, norm, out), its state
        # a head_dim × head_dim matrix per head, in blocks of block_size while prefilling.
        # Its output norm is counted with the norms, as the attribution rule sorts a Norm class.
        norms = {n for n, mod in child.named_modules() if n and attribute((Owner(n, type(mod).__name__),))[0] == "norm"}
        tensors = rest_of(child, norms)
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
        lightning = LightningScan(a["num_attention_heads"], a["head_dim"], a["block_size"])
        if lightning.chunk < 1:
            raise FFNError("block_size", lightning.chunk, _("must be a positive integer"))
        norm_tensors = tuple(t for t in rest_of(child, set()) if t not in tensors)
        mixer = LinearMixer(Message(N_("lightning attention")), name, tensors, norm_tensors, flops, read.layers, scan=lightning)
    elif (conv := _short_conv(d, child)) is not None:
        # LFM2's and LFM3's short convolution: a depthwise conv over the gated input, its kernel − 1 latest inputs kept.
        mixer = short_conv(d, kernel=conv.kernel_size[0], bias=conv.bias is not None, layers=read.layers)
    elif selective is not None:
        # Mamba-1 (Jamba, Falcon-Mamba): its tensors as built, its state a state-size vector per
        # channel (A_log's [channels, state]) and its depthwise conv's kernel − 1 latest inputs.
        tensors = rest_of(child, set())
        selective_scan, taps = selective
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
        # Zamba's x and dt projections, a matrix a head (x_proj_weight, dt_proj_weight): a matmul a token each
        flops += 2 * sum(p.numel() for n, p in child.named_parameters(recurse=False) if p.dim() == 3 and n.endswith("_weight"))
        c = selective_scan.channels
        mixer = LinearMixer("Mamba", name, tensors, (), flops, read.layers, 2 * c * taps, c * (taps - 1), selective_scan)
    elif (lru := _rg_lru(child)) is not None:
        # RecurrentGemma's recurrent block (Griffin): linear_x and linear_y (d → lru_width), a depthwise
        # conv over the x branch, the RG-LRU's two block-diagonal gates (heads × width² each, matmuls
        # a token) and its recurrence, linear_out back to d; its tensors as built. transformers keeps
        # the recurrent state in float32 whatever the dtype (RecurrentGemmaRecurrentBlock._setup_cache).
        rg, conv = lru
        tensors = rest_of(child, set())
        gates = sum(p.numel() for p in rg.parameters() if p.dim() == 3)
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2) + 2 * gates
        c, taps = int(conv.in_channels), int(conv.kernel_size[0])
        mixer = LinearMixer(
            Message(N_("RG-LRU")), name, tensors, (), flops, read.layers, 2 * c * taps, c * (taps - 1), ElementwiseScan(c, "RG-LRU"), 4
        )
    elif all(isinstance(getattr(child, n, None), nn.Parameter) for n in ("time_decay", "time_first")) and "receptance" in dict(
        child.named_children()
    ):
        # RWKV-4's time mixing: key, value, receptance and output (d → d), the decay and bonus a
        # channel, the token-shift mixes; its tensors as built. Its WKV state (numerator,
        # denominator, maximum a channel) is float32, as transformers keeps it; its token shift
        # keeps the latest input a channel, a window of one, the channel mixing's beside it.
        tensors = rest_of(child, set())
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
        c = int(child.get_parameter("time_decay").numel())
        mixer = LinearMixer(
            Message(N_("RWKV time mixing")), name, tensors, (), flops, read.layers, 0, c, ElementwiseScan(c, "WKV", per_channel=3), 4
        )
    elif (memory := _mlstm(child)) is not None:
        # xLSTM's mLSTM layer: q, k, v, the output gate, the input and forget gates (one value a
        # head), a multi-head norm and out_proj, its tensors as built; its memory kept per head at the
        # config's inference_state_dtype, as transformers' xLSTMCache keeps it (float32 by default).
        matrix_memory, state_bytes = memory
        norms = {n for n, mod in child.named_modules() if n and attribute((Owner(n, type(mod).__name__),))[0] == "norm"}
        tensors = rest_of(child, norms)
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
        norm_tensors = tuple(t for t in rest_of(child, set()) if t not in tensors)
        mixer = LinearMixer(Message(N_("mLSTM")), name, tensors, norm_tensors, flops, read.layers, scan=matrix_memory,
                            state_dtype_bytes=state_bytes, norm_kind=N_("per-head LayerNorm"))  # fmt: skip
    elif "Delta" in name and all(isinstance(a.get(k), int) for k in ("num_heads", "head_dim", "conv_dim", "conv_kernel_size")):
        # A delta rule of another shape (Kimi Delta Attention): its tensors as built, its state
        # a key × value matrix per head and its conv's kernel − 1 latest inputs of each channel.
        tensors = rest_of(child, set())
        heads, dim, conv, kernel = a["num_heads"], a["head_dim"], a["conv_dim"], a["conv_kernel_size"]
        flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight") and len(t.shape) == 2)
        scan = DeltaRuleScan(heads, dim, dim)
        mixer = LinearMixer(name, name, tensors, (), flops, read.layers, 2 * conv * kernel, conv * (kernel - 1), scan)
    if mixer is not None and mixer.params + mixer.norm_params == n_params(child):
        read.mixer = mixer
        read.said.append(Message(N_("{kind}: {state}"), kind=mixer.kind, state=mixer.state_words()))
        return
    tensors = rest_of(child, set())
    flops = 2 * sum(t.count for t in tensors if t.name.endswith(".weight"))
    read.mixer = LinearMixer(name, name, tensors, (), flops, read.layers, state_sized=False)
    read.said.append(Message(N_("{name}: counted tensor by tensor"), name=name))
    read.left_out.append(
        Message(
            N_("the decode state of {name}, and the FLOPs of its state beyond its projections: a token mixer ffn does not size"), name=name
        )
    )


def kept_in_float32(hf_config: PretrainedConfig) -> frozenset[str]:
    """The module names the model's class keeps in float32 whatever dtype it is loaded in
    (its _keep_in_fp32_modules_strict and _keep_in_fp32_modules: Inkling's short convolutions)."""
    names: set[str] = set()
    model_type = str(hf_config.get_text_config().model_type)
    for mapping in (modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, modeling_auto.MODEL_MAPPING_NAMES):
        cls = getattr(transformers, str(mapping.get(model_type, "")), None)
        for key in ("_keep_in_fp32_modules_strict", "_keep_in_fp32_modules"):
            listed = getattr(cls, key, None)
            names |= {n for n in listed or () if isinstance(n, str)}
    return frozenset(names)


def kept_as(path: str, kept: frozenset[str]) -> bool:
    """Whether the module at `path` is one a class keeps in float32: a name it lists is the path,
    or a run of the path's module names (Inkling 2's "sconv.conv1d" in k_proj.sconv.conv1d)."""
    return any(f".{name}." in f".{path}." for name in kept)


def depthwise_convs(modules: Mapping[str, nn.Module]) -> list[tuple[str, nn.Conv1d]]:
    """The depthwise Conv1d modules among `modules` (one filter a channel), by their path."""
    return [(n, m) for n, m in modules.items() if isinstance(m, nn.Conv1d) and m.groups == m.in_channels == m.out_channels]


def lone_conv(module: nn.Module) -> bool:
    """A module that holds one depthwise convolution and nothing else (Inkling's attn_sconv and mlp_sconv
    over the residual stream): a token mixer of a few tokens, whatever its name."""
    convs = depthwise_convs(dict(module.named_modules()))
    return len(convs) == 1 and n_params(convs[0][1]) == n_params(module)


def short_convs(convs: list[tuple[str, nn.Conv1d]], layers: tuple[int, ...], fp32: bool) -> LinearMixer:
    """Depthwise causal convolutions beside the layer's attention (Inkling's, over the residual
    stream before the attention and before the FFN) as one mixer: their taps, 2 · channels · taps
    FLOPs a token each, and each one's kernel − 1 latest inputs kept while decoding, in float32
    where the model keeps them so."""
    tensors = tuple(param_tensor(path, leaf, p, conv) for path, conv in convs for leaf, p in conv.named_parameters())
    flops = sum(2 * c.in_channels * int(c.kernel_size[0]) for _p, c in convs)
    window = sum(c.in_channels * (int(c.kernel_size[0]) - 1) for _p, c in convs)
    detail = Message(N_("{n} depthwise convolutions: {paths}"), n=f"{len(convs):,}", paths=Message.listed([p for p, _c in convs]))
    return LinearMixer(
        Message(N_("short convolutions")),
        detail,
        tensors,
        (),
        0,
        layers,
        flops,
        window,
        conv_dtype_bytes=4 if fp32 else None,
        whole_on_each_gpu=True,
    )


def _mlstm(child: nn.Module) -> tuple[MLSTMScan, int | None] | None:
    """The matrix memory of an mLSTM layer (transformers' xLSTMLayer) and the bytes of one of its
    elements: q and k of one width, v, and an input and a forget gate of one value a head; the
    chunk its kernels run in and the state's dtype from the config it was built with."""
    m = dict(child.named_children())
    q, k, v, i, f = (linear_named(m, n) for n in ("q", "k", "v", "igate_preact", "fgate_preact"))
    if q is None or k is None or v is None or i is None or f is None:
        return None
    heads, config = i.out_features, getattr(child, "config", None)
    chunk, dtype = getattr(config, "chunk_size", None), getattr(config, "inference_state_dtype", None)
    shaped = f.out_features == heads and q.out_features == k.out_features and not (q.out_features % heads or v.out_features % heads)
    if not shaped or not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1 or dtype not in STATE_DTYPE_BYTES:
        return None
    return MLSTMScan(heads, q.out_features // heads, v.out_features // heads, chunk), STATE_DTYPE_BYTES[dtype]


def _rg_lru(child: nn.Module) -> tuple[nn.Module, nn.Conv1d] | None:
    """The RG-LRU of a Griffin recurrent block (transformers' RecurrentGemmaRecurrentBlock): an
    `rg_lru` with a recurrent_param and two [heads, width, width] gates, beside a depthwise
    `conv_1d` over as many channels."""
    m = dict(child.named_children())
    rg, conv = m.get("rg_lru"), m.get("conv_1d")
    if rg is None or not isinstance(conv, nn.Conv1d) or not conv.in_channels == conv.groups == conv.out_channels:
        return None
    gates = [getattr(rg, n, None) for n in ("input_gate_weight", "recurrent_gate_weight")]
    param = getattr(rg, "recurrent_param", None)
    shaped = all(isinstance(g, nn.Parameter) and g.dim() == 3 for g in gates) and isinstance(param, nn.Parameter)
    return (rg, conv) if shaped and param is not None and param.numel() == conv.in_channels else None


def _short_conv(d: int, child: nn.Module) -> nn.Conv1d | None:
    """The depthwise conv of a short convolution (transformers' Lfm2ShortConv and its kin): a
    Conv1d over hidden_size channels, one each, between in_proj (d → 3·d) and out_proj (d → d)."""
    m = dict(child.named_children())
    conv, into, out = m.get("conv"), linear_named(m, "in_proj"), linear_named(m, "out_proj")
    if not isinstance(conv, nn.Conv1d) or into is None or out is None:
        return None
    shaped = conv.in_channels == conv.groups == conv.out_channels == d and (into.out_features, out.in_features) == (3 * d, d)
    return conv if shaped else None


def _selective_scan(child: nn.Module) -> tuple[SelectiveScan, int] | None:
    """Mamba-1's scan and conv kernel where the module is one: A_log of [channels, state] (Zamba's
    of [heads, channels a head, state]) and a depthwise Conv1d over those channels."""
    a_log, conv = getattr(child, "A_log", None), getattr(child, "conv1d", None)
    if not isinstance(a_log, nn.Parameter) or a_log.dim() not in (2, 3) or not isinstance(conv, nn.Conv1d):
        return None
    channels, state = math.prod(a_log.shape[:-1]), a_log.shape[-1]
    if conv.in_channels != channels or conv.groups != channels:
        return None
    return SelectiveScan(int(channels), int(state)), int(conv.kernel_size[0])
