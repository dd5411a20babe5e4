"""One built decoder layer read: its children sorted into token mixer, FFN, norms and the rest
(wrappers opened, gated norms, lone convolutions over the residual stream, hyper-connections,
tables looked up inside it), each read by its part's reader, and the pieces held to the layer's
own parameter count."""

from __future__ import annotations

import re
from dataclasses import replace

from torch import nn
from transformers import PretrainedConfig

from ffn_cli.accounting import ParamTensor
from ffn_cli.configs.attribution import Owner, attribute, is_experts
from ffn_cli.configs.encoder_decoder import CROSS_ATTENTION, ENCODER_ATTENTION, EncoderDecoder
from ffn_cli.configs.families.common import FamilyReader
from ffn_cli.configs.layer_read.attention import (
    Source,
    attends_to_the_source,
    cca_attention,
    cca_projection,
    compressed_attention,
    cross_attention,
    encoder_tokens,
    image_tiles,
    inner_attention,
    is_attention,
    is_compressed,
    is_cross,
    latent_attention,
    merged_cross_attention,
    mixture_of_heads,
    query_experts,
    softmax_attention,
)
from ffn_cli.configs.layer_read.ffn import ffn_count, read_ffn
from ffn_cli.configs.layer_read.mixers import depthwise_convs, kept_as, kept_in_float32, linear_mixer, lone_conv, short_convs
from ffn_cli.configs.layer_read.tensors import LayerRead, Unread, beyond_ffn, layers_named, n_params, named_tensors, rest_of
from ffn_cli.i18n import N_, Message, _, shown
from ffn_cli.models.mixers import ElementwiseScan
from ffn_cli.models.spec import kv_tensors

__all__ = ["read_layer"]

_NO_MIXER_RECOGNISED = N_(
    "no token mixer recognised among {names} (counted as tensors beside the parts): what it keeps while decoding is not sized"
)


def _holds_a_mixer(child: nn.Module) -> bool:
    """A module of several parts, one of them a token mixer of its own modules (not a projection):
    a decoder layer inside a layer."""
    inner = [(n, c) for n, c in child.named_children() if n_params(c)]
    mixers = [c for n, c in inner if not isinstance(c, nn.Linear) and attribute((Owner(n, type(c).__name__),))[0] == "attention"]
    return len(inner) > 1 and bool(mixers)


# A decoder alone whose layers attend to an encoder's output (TrOCR's causal LM): the encoder is another model.
_ENCODER_ELSEWHERE = N_(
    "the encoder whose output these layers attend to, which is not in this model (its config describes the decoder "
    "alone): its weights and its pass over a source"
)


def _unwrapped(layer: nn.Module) -> list[tuple[str, nn.Module]]:
    """The layer's children, a module that only wraps an attention with its norms opened (DBRX's
    norm_attn_norm: norm_1, attn, norm_2), or one FFN module with its norm (CPM-Ant's ffn:
    layernorm_before_ffn, ffn), its children named from the layer; so too the decoder layers of a
    layer made of two (Zamba's hybrid layer: its shared transformer and its Mamba layer)."""
    out: list[tuple[str, nn.Module]] = []
    layers = {n for n, c in layer.named_children() if _holds_a_mixer(c)}
    for name, child in layer.named_children():
        inner = list(child.named_children())
        kinds = {attribute((Owner(n, type(c).__name__),))[0] for n, c in inner if n_params(c)}
        ffn_with_norm = (kinds == {"ffn", "norm"} and attribute((Owner(name, type(child).__name__),))[0] == "ffn"
                         and len([c for _n, c in inner if n_params(c) and not isinstance(c, nn.Linear)]) == 2)  # fmt: skip
        wraps = {"attention", "norm"} <= kinds <= {"attention", "norm"} or ffn_with_norm or (len(layers) > 1 and name in layers)
        if not list(child.parameters(recurse=False)) and wraps:
            out += [(f"{name}.{n}", c) for n, c in inner]
        else:
            out.append((name, child))
    return out


def read_layer(
    d: int,
    r: FamilyReader,
    hf_config: PretrainedConfig,
    layer: nn.Module,
    layers: tuple[int, ...],
    shared: tuple[str, ...] = (),
    source_of: EncoderDecoder | None = None,
) -> LayerRead:
    """Sort a built layer's children into token mixer, FFN, norms and the rest, and read each. A
    norm inside a block `shared` with other layers is the block's: among the rest, not a layer norm.
    An encoder-decoder's (`source_of`) decoder layer attends to the encoder's output beside its own tokens."""
    read = LayerRead(layers, n_params(layer), shared_paths=shared)
    text = hf_config.get_text_config()
    mixers: list[tuple[str, nn.Module]] = []
    ffns: list[tuple[str, nn.Module]] = []
    rest: list[tuple[str, nn.Module]] = []
    convs: list[tuple[str, nn.Module]] = []  # lone short convolutions over the residual stream (Inkling's)
    gates: list[tuple[str, tuple[ParamTensor, ...]]] = []  # the gates of gated norms (A.X K2's), by the norm's name
    for name, child in _unwrapped(layer):
        if not n_params(child):
            continue
        if lone_conv(child):
            convs.append((name, child))
            continue
        kind, _depth = attribute((Owner(name, type(child).__name__), Owner("", "")))
        in_shared = any(name.startswith(f"{p}.") for p in shared)
        if not in_shared and (kind == "norm" or attribute((Owner(name, type(child).__name__),))[0] == "norm"):
            gated = _gated_norm(name, child)
            norm = gated[0] if gated is not None else child
            weights = [p for p in norm.parameters()]
            if all(p.dim() == 1 and p.shape[0] == d for p in weights) and len(weights) in (1, 2):
                read.norms += 1
                read.norm_names.append(name)
                # one weight: an RMSNorm, or a LayerNorm without its bias (MPT's)
                read.norm = "layernorm" if len(weights) == 2 else "layernorm_no_bias" if _is_layer_norm(norm) else "rmsnorm"
                read.norm_params = len(weights) * d
                if gated is not None:
                    gates.append((name, gated[1]))
                continue
        (mixers if kind == "attention" else ffns if kind == "ffn" else rest).append(
            (name, inner_attention(child) if kind == "attention" else child)
        )
    if any(is_experts(n, type(c).__name__) for n, c in ffns):  # a router beside the experts (Gemma 4): the FFN's
        ffns += [(n, c) for n, c in rest if n in ("router", "gate")]
        rest = [(n, c) for n, c in rest if n not in ("router", "gate")]
    where = layers_named(layers)
    # A decoder layer's attention over the encoder's output (BART's encoder_attn), by its name; a decoder's
    # alone (TrOCR's, its encoder a vision model the config does not describe) over a source of unsaid length
    cross = {n for n, _c in mixers if n in (CROSS_ATTENTION if source_of is not None else ENCODER_ATTENTION)}
    source = encoder_tokens(source_of) if source_of is not None else Source("encoder", None)
    if cross and source_of is None:  # its encoder is another model's: what it holds and runs is named, never counted as none
        read.left_out.append(Message(_ENCODER_ELSEWHERE))
        read.flops_left_out.append(Message(_ENCODER_ELSEWHERE))
    try:
        attends = [(n, c) for n, c in mixers if is_attention(c) and n not in cross]
        if len(mixers) > 2 or (len(mixers) == 2 and len(attends) != 1):  # one attention beside one mixer at most (Falcon-H1)
            raise Unread(
                Message(N_("{n} token mixers in one layer ({names})"), n=f"{len(mixers):,}", names=", ".join(n for n, _c in mixers))
            )
        for name, child in sorted(mixers, key=lambda m: not is_attention(m[1]) or m[0] in cross):  # the attention first
            modules = dict(child.named_modules())
            if name in cross:
                cross_attention(child, read, source)
            elif "kv_a_proj_with_mqa" in modules:
                latent_attention(d, text, child, read)
            elif is_compressed(child):
                compressed_attention(d, child, read)
            elif (cca := cca_projection(child)) is not None:
                cca_attention(d, text, child, cca, read)
            elif (heads := query_experts(d, child)) is not None:
                mixture_of_heads(d, child, heads, read)
            elif is_attention(child):
                softmax_attention(d, text, child, read)
            elif is_cross(child):
                cross_attention(child, read, Source("image", image_tiles(hf_config)))
            else:
                linear_mixer(d, child, read)
            if read.mixer is not None and len(mixers) == 2 and not read.mixer.state_sized and not read.mixer.unsized_source:
                raise Unread(Message(N_("{cls} beside attention is a mixer ffn does not size"), cls=type(child).__name__))
        # An encoder-decoder's decoder layer whose one attention takes the encoder's output too (T5Gemma 2's)
        if source_of is not None and not cross and len(attends) == 1 and read.mixer is None and attends_to_the_source(attends[0][1]):
            merged_cross_attention(attends[0][1], read, source)
        if convs:  # short convolutions over the residual stream beside the attention (Inkling's): a mixer beside it
            if read.mixer is not None or read.attention is None:
                raise Unread(Message(N_("short convolutions beside a token mixer other than attention")))
            inner = [(f"{n}.{path}", conv) for n, c in convs for path, conv in depthwise_convs(dict(c.named_modules()))]
            kept = kept_in_float32(hf_config)
            read.mixer = short_convs(inner, layers, fp32=all(kept_as(n, kept) for n, _c in inner))
            read.said.append(Message(N_("{kind}: {state}"), kind=read.mixer.kind, state=read.mixer.state_words()))
            mixers += convs
        built, counted = sum(n_params(c) for _n, c in mixers), _mixer_params(read)
        if counted != built:
            cls = " + ".join(type(c).__name__ for _n, c in mixers)
            raise Unread(Message(N_("{cls} counts {counted} parameters where the module holds {built}"),
                                  cls=cls, counted=f"{counted:,}", built=f"{built:,}"))  # fmt: skip
        if ffns:
            read_ffn(d, r, hf_config, ffns, read)
        for name, tensors in gates:  # a gate before a routed FFN is the MoE layer's (its moe_extra); any other, the layer's
            before_ffn = any(w in name for w in ("post_attention", "feedforward", "ffn", "mlp"))
            if before_ffn and read.ffn is not None and read.ffn.mixture is not None:
                read.ffn_extra += tensors
            else:
                read.other += tensors
        wkv = read.mixer is not None and isinstance(read.mixer.scan, ElementwiseScan) and read.mixer.scan.name == "WKV"
        if read.mixer is not None and wkv and any(hasattr(c, "time_mix_key") for _n, c in ffns):
            # RWKV's channel mixing shifts its input a token too: its latest input, kept beside the time mixing's
            said = read.said.index(Message(N_("{kind}: {state}"), kind=read.mixer.kind, state=read.mixer.state_words()))
            read.mixer = replace(read.mixer, conv_state_elements=read.mixer.conv_state_elements + d)
            read.said[said] = Message(N_("{kind}: {state}"), kind=read.mixer.kind, state=read.mixer.state_words())
    except Unread as unread:
        raise beyond_ffn(r.source, _("ffn cannot lay out {where} of {model_type}: {why}").format(
            where=where.shown(), model_type=hf_config.model_type, why=shown(unread.why))) from None  # fmt: skip
    hyper = [c for _n, c in rest if _residual_copies(c)]
    if hyper:  # DeepSeek-V4's mHC, Qwen4-Exp's gated residuals: the residual stream is that many copies of the hidden state wide
        copies = sorted({_residual_copies(c) for c in hyper})
        if len(copies) > 1:
            raise Unread(Message(N_("hyper-connections over {n} copies of the residual stream"), n=", ".join(map(str, copies))))
        read.residual_copies = copies[0]
        read.other_flops = sum(_hyper_connection_flops(d, c) for c in hyper)
    attending = [(n, c) for n, c in rest if "Attention" in type(c).__name__]
    for cls in dict.fromkeys(type(c).__name__ for _n, c in attending):  # Inkling 2's attention over earlier blocks' outputs
        paths = Message.listed([n for n, c in attending if type(c).__name__ == cls])
        read.flops_left_out.append(Message(N_("the FLOPs of {cls}'s attention ({paths}), beyond its parameters"), cls=cls, paths=paths))
    for name, child in rest:
        tables = _tables_in(child, read)
        _convolutions_in(child, read)
        read.other += tuple(
            ParamTensor(f"{name}.{t.name}" if "(" not in t.name else f"{name} {t.name}", t.shape) for t in rest_of(child, set(tables))
        )
        read.tables += tuple(ParamTensor(f"{name}.{p}", tuple(child.get_submodule(p).get_parameter("weight").shape)) for p in tables)
    own = tuple(ParamTensor(name, tuple(p.shape)) for name, p in layer.named_parameters(recurse=False))  # Doge's residual scales
    if read.mixer is not None and read.attention is None and any(is_cross(c) for _n, c in mixers):
        # A cross-attention layer's own gates (Llama 3.2 Vision's tanh gates on the cross-attention's
        # output and on its MLP's): scalars of that layer kind alone, named with its mixer's tensors.
        read.mixer = replace(read.mixer, tensors=(*read.mixer.tensors, *own))
    else:
        read.other += own
    if not mixers and rest:  # every decoder layer mixes tokens: here in a module ffn does not know
        names = ", ".join(type(c).__name__ for _n, c in rest)
        read.left_out.append(Message(_NO_MIXER_RECOGNISED, names=names))
    counted = _read_params(read)
    if counted != read.params:  # every tensor of the layer is in one piece, once
        mismatch = _("its pieces count {counted:,} parameters where the layer holds {built:,}").format(counted=counted, built=read.params)
        raise beyond_ffn(r.source, _("ffn cannot lay out {where} of {model_type}: {why}").format(
            where=where.shown(), model_type=hf_config.model_type, why=mismatch))  # fmt: skip
    return read


def _tables_in(child: nn.Module, read: LayerRead) -> list[str]:
    """The tables a module beside a layer's parts looks rows up in (Qwen4-Exp's PLE n-gram table,
    an nn.Embedding of 320,001,536 rows of 160): a token reads rows of them, never multiplies by them;
    the rows it reads of each, one a hashed head where its module says how many (ngram_heads)."""
    found = [p for p, m in child.named_modules() if p and isinstance(m, nn.Embedding)]
    for p in found:
        holder = child.get_submodule(p.rpartition(".")[0]) if "." in p else child
        heads = getattr(holder, "ngram_heads", 1)
        read.table_lookups = heads if isinstance(heads, int) and not isinstance(heads, bool) and heads > 0 else 1
    return found


def _convolutions_in(child: nn.Module, read: LayerRead) -> None:
    """A depthwise causal convolution inside a module beside a layer's parts (Qwen4-Exp's PLE
    conv1d, dilated by its n-gram size): what it keeps per sequence between tokens, its (taps − 1)
    · dilation latest inputs of each channel, and its work, 2 · channels · taps FLOPs a token."""
    for m in child.modules():
        if isinstance(m, nn.Conv1d) and m.groups == m.in_channels == m.out_channels:
            taps, dilation = int(m.kernel_size[0]), int(m.dilation[0])
            read.other_state += (taps - 1) * dilation * m.in_channels
            read.other_flops += 2 * m.in_channels * taps


def _gated_norm(name: str, module: nn.Module) -> tuple[nn.Module, tuple[ParamTensor, ...]] | None:
    """A norm whose output a small MLP of Linears gates (A.X K2's AXK2GatedRMSNorm: y·σ(fc2(silu(fc1(y))))):
    its one norm, and its gate's tensors named from `name`; None for any other module."""
    if any(True for _ in module.parameters(recurse=False)):
        return None
    children = [(n, c) for n, c in module.named_children() if n_params(c)]
    norms = [c for n, c in children if attribute((Owner(n, type(c).__name__),))[0] == "norm"]
    gate = [(n, c) for n, c in children if all(c is not x for x in norms)]
    if len(norms) != 1 or not gate:
        return None
    leaves = [(f"{n}.{sub}" if sub else n, m) for n, c in gate for sub, m in c.named_modules() if not list(m.children()) and n_params(m)]
    if any(not isinstance(m, nn.Linear) for _p, m in leaves):
        return None
    return norms[0], tuple(t for path, m in leaves for t in named_tensors(f"{name}.{path}", m))


def _residual_copies(module: nn.Module) -> int:
    """The copies of the residual stream a hyper-connection mixes (DeepSeek-V4's hc_mult, Qwen4-Exp's
    hc_count); 0 for any other module."""
    for key in ("hc_mult", "hc_count"):
        n = getattr(module, key, None)
        if isinstance(n, int) and not isinstance(n, bool) and n > 1:
            return n
    return 0


# A root-mean-square norm by another name: T5's "LayerNorm" and its kin's (mT5, UMT5, LongT5, Switch
# Transformers, Pix2Struct, UDOP, Pop2Piano), ImageGPT's, CPM-Ant's; none centres, as their forward computes.
_RMS_NAMED_LAYER_NORM = re.compile(r"(T5|SwitchTransformers|Pix2Struct|Udop|Pop2Piano|ImageGPT|CpmAnt)LayerNorm$")


def _is_layer_norm(module: nn.Module) -> bool:
    """A LayerNorm (it centres as well as scales), by its type or its class's name, but those named
    LayerNorm that scale by the root mean square alone (_RMS_NAMED_LAYER_NORM)."""
    name = type(module).__name__
    return isinstance(module, nn.LayerNorm) or ("LayerNorm" in name and "RMS" not in name and not _RMS_NAMED_LAYER_NORM.search(name))


def _hyper_connection_flops(d: int, module: nn.Module) -> int:
    """One hyper-connection's contractions per token (transformers' DeepseekV4HyperConnection and the
    decoder layer around it), N copies of the residual stream: the projection of the N·d flattened
    copies to the (2 + N)·N mixing weights (2 a weight of `fn`), the copies collapsed into the
    block's input (2·N·d) and mixed into the output's copies by the N × N comb (2·N²·d)."""
    n, fn = getattr(module, "hc_mult", None), getattr(module, "fn", None)
    if not isinstance(n, int) or not isinstance(fn, nn.Parameter):
        return 0
    return 2 * fn.numel() + 2 * n * d + 2 * n * n * d


def _mixer_params(read: LayerRead) -> int:
    """The token mixers as read: a linear mixer with its norm, an attention with its other tensors, or both side by side."""
    mixer = read.mixer.params + read.mixer.norm_params if read.mixer is not None else 0
    if read.attention is None:
        return mixer
    kv = sum(t.count for t in kv_tensors(read.attention)) if read.kv_shared else 0
    unpicked = (read.attention_routing[0] - read.attention_routing[1]) * sum(t.count for t in read.attention_experts)
    return mixer + read.attention.params - kv + sum(t.count for t in read.attention_extra) + unpicked


def _read_params(read: LayerRead) -> int:
    beside = sum(t.count for t in (*read.other, *read.tables, *read.image_experts, *read.adapters))
    return _mixer_params(read) + ffn_count(read) + read.norms * read.norm_params + beside
