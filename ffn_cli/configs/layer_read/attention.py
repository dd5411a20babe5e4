"""A layer's attention read from its modules: softmax attention (q/k/v/o projections or one fused
qkv projection, q/k norms, sinks, an output gate, a window, convolutions over its keys and
values, QSA's indexer), latent attention, DeepSeek-V4's compressed attention, compressed
convolutional attention, a mixture of attention heads, and cross-attention over an image or an
encoder's output; and which modules are attention at all."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import torch
from torch import nn
from transformers import PretrainedConfig

from ffn_cli.accounting import ParamTensor
from ffn_cli.attention import AttentionSpec, LatentAttentionSpec, QKNorm
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.configs.attribution import Owner, attribute
from ffn_cli.configs.encoder_decoder import EncoderDecoder
from ffn_cli.configs.layer_read.ffn import PAIRED_EXPERTS, paired_experts
from ffn_cli.configs.layer_read.mixers import depthwise_convs, kept_as, kept_in_float32
from ffn_cli.configs.layer_read.tensors import LayerRead, Unread, linear_named, n_params, named_tensors, positive_ints, rest_of
from ffn_cli.i18n import N_, Message
from ffn_cli.models.layer import compressed_summary
from ffn_cli.models.mixers import LinearMixer, SourceAttention
from ffn_cli.models.tensor_notes import BIAS_ALONE, GATE_HALF, NOT_PICKED, noted

__all__ = [
    "Source",
    "cca_attention",
    "cca_projection",
    "compressed_attention",
    "cross_attention",
    "encoder_tokens",
    "image_tiles",
    "inner_attention",
    "is_attention",
    "is_compressed",
    "is_cross",
    "latent_attention",
    "mixture_of_heads",
    "query_experts",
    "softmax_attention",
]

# A query projection, and a fused one to the queries, keys and values, by the names transformers' models give them.
_Q_NAMES = ("q_proj", "query", "q_gate_proj", "Wq", "project_q")  # CPM-Ant's project_q, project_k, project_v
_K_NAMES = ("k_proj", "key", "Wk", "project_k")
_V_NAMES = ("v_proj", "value", "Wv", "project_v")
_QKV_NAMES = ("qkv_proj", "query_key_value", "Wqkv", "c_attn", "qkv")
_STATIC_TAPS = ".static_weight"  # a dynamic short convolution's taps that every token shares (Inkling 2's)
# Attention with queries, keys and values but no softmax over a cache: a recurrent state in its
# place (MiniMax's lightning attention, a delta rule), whatever its projections are named.
_LINEAR_ATTENTION = re.compile(r"Lightning|LinearAttention|Delta|Retention|Mamba|RWKV|GLA")


def _projection(modules: Mapping[str, nn.Module], *names: str) -> nn.Linear | None:
    """An attention's projection by its name: the Linear itself, or the one Linear a module of that
    name wraps with a norm or a convolution after it (Inkling 2's q_proj.linear, k_proj.linear)."""
    found = linear_named(modules, *names)
    if found is None:
        name = next((n for n in names if n in modules), None)
        found = linear_named(modules, f"{name}.linear") if name is not None else None
    return found


def _heads(text: PretrainedConfig, child: nn.Module) -> tuple[int, int]:
    heads = getattr(child, "num_heads", None) or getattr(text, "num_attention_heads", None)
    if not isinstance(heads, int):
        raise Unread(Message(N_("no num_attention_heads")))
    groups = getattr(child, "num_key_value_groups", None)
    kv = heads // groups if isinstance(groups, int) and groups > 0 else getattr(text, "num_key_value_heads", None) or heads
    return heads, int(kv)


def softmax_attention(d: int, text: PretrainedConfig, child: nn.Module, read: LayerRead) -> None:
    m = dict(child.named_modules())
    q, k, v = _projection(m, *_Q_NAMES), _projection(m, *_K_NAMES), _projection(m, *_V_NAMES)
    o = _projection(m, "o_proj", "out_proj", "dense", "c_proj", "Wo", "attention_out")  # ModernBERT's Wo
    fused = linear_named(m, *_QKV_NAMES) if q is None and k is None and v is None else None
    if fused is not None and o is not None:  # one projection to the queries, keys and values (Ergo's qkv_proj, MPT's Wqkv)
        q, k, v = _split_qkv(text, child, fused, o)
    # Gemma 4's attention_k_eq_v full layers: no v_proj, the values projected by k_proj.
    values_from_keys = v is None and bool(getattr(child, "use_alternative_attention", False) and getattr(text, "attention_k_eq_v", False))
    v = k if values_from_keys else v
    # A KV-shared layer (Gemma 4's E2B and E4B, as Gemma 3n's) builds no k_proj or v_proj: it reads
    # the keys and values an earlier layer of its kind computed, and is the shape of that kind less them.
    read.kv_shared = k is None and v is None and getattr(child, "is_kv_shared_layer", False) is True
    if q is None or o is None or (not read.kv_shared and (k is None or v is None)):
        raise Unread(Message(N_("no q, k, v and o projections")))
    heads, kv = _heads(text, child)
    # The KV heads a fused projection holds; or a module that reads no num_key_value_heads (BioGPT's,
    # CTRL's), whose k_proj is as wide as its q_proj whatever the config says.
    if k is not None and (fused is not None or (k.out_features == q.out_features and not hasattr(child, "num_key_value_groups"))):
        kv = k.out_features * heads // q.out_features
    if k is None or v is None:
        head_dim = getattr(child, "head_dim", None)
        if not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim < 1:
            raise Unread(Message(N_("a KV-shared attention that names no head_dim")))
        v_head_dim = head_dim
    else:
        if k.out_features % kv:
            raise Unread(
                Message(N_("k_proj's {outputs} outputs do not split into {kv} KV heads"), outputs=f"{k.out_features:,}", kv=f"{kv:,}")
            )
        head_dim = k.out_features // kv
        if v.out_features % kv:
            raise Unread(
                Message(N_("v_proj's {outputs} outputs do not split into {kv} KV heads"), outputs=f"{v.out_features:,}", kv=f"{kv:,}")
            )
        v_head_dim = v.out_features // kv  # MiMo-V2-Flash's values are narrower than its keys
    q_dim = heads * head_dim
    # What q, k and v read: d, or Zamba's 2 · d (the hidden state and the token embeddings side by side)
    reads = q.in_features
    if any(p is not None and p.in_features != reads for p in (k, v)) or o.out_features != d:
        raise Unread(Message(N_("q_proj, k_proj and v_proj read different widths, or o_proj does not write hidden_size")))
    if q.out_features not in (q_dim, 2 * q_dim) or o.in_features != heads * v_head_dim:
        raise Unread(Message(N_("q_proj's {q} outputs and o_proj's {o} inputs are not {heads} heads × {head_dim}"),
                              q=f"{q.out_features:,}", o=f"{o.in_features:,}", heads=f"{heads:,}", head_dim=f"{head_dim:,}"))  # fmt: skip
    norms = {n: m[n] for n in ("q_norm", "k_norm") if n in m and n_params(m[n])}  # a norm without weights counts none (NanoChat's)
    qk_norm: QKNorm = "none"
    if norms:
        width = next(iter(norms["q_norm"].parameters())).shape[0] if "q_norm" in norms and n_params(norms["q_norm"]) else 0
        qk_norm = "head" if width == head_dim else "proj"
    sinks = isinstance(getattr(child, "sinks", None), nn.Parameter)
    spec = _attention_spec(
        d,
        (heads, kv, head_dim),
        q,
        o,
        qk_norm=qk_norm,
        qk_norm_bias=any(getattr(n, "bias", None) is not None for n in norms.values()),
        sinks=sinks,
        v_head_dim=v_head_dim if v_head_dim != head_dim else None,
        values_from_keys=values_from_keys,
        input_width=reads if reads != d else None,
    )
    names = {n for n, mod in m.items() if mod is not None and mod in (q, k, v, o, fused, *norms.values())}
    extra: tuple[ParamTensor, ...] = ()
    if q.out_features == 2 * q_dim:  # the second half gates the output (Qwen3-Next, Qwen3.5, MiniCPM5's q_gate_proj)
        q_name = next(n for n in _Q_NAMES if m.get(n) is q)
        extra = (ParamTensor(noted(f"{q_name}.weight", GATE_HALF), (q_dim, reads)),)
        if q.bias is not None:
            extra += (ParamTensor(noted(f"{q_name}.bias", GATE_HALF), (q_dim,)),)
    biased = {p.bias is not None for p in (q, k, v) if p is not None}
    if len(biased) > 1 and fused is None and q.out_features == q_dim:
        # Some of q, k and v hold a bias and some none (Whisper's k_proj none): their biases beside the spec's projections
        spec = replace(spec, qkv_bias=False)
        extra += tuple(ParamTensor(noted(f"{n}.bias", BIAS_ALONE), tuple(mod.bias.shape))
                       for n, mod in m.items() if mod in (q, k, v) and mod.bias is not None)  # fmt: skip
    used = names | ({"sinks"} if sinks else set())
    convs = _kv_convs(m, k, v, values_from_keys)
    if convs is not None:  # Inkling's k_sconv and v_sconv, kept in float32 where the model says so
        taps, paths = convs
        # A dynamic convolution's window is float32 as its taps are (Inkling 2's sums them per token in float32).
        fp32 = all(p.endswith(_STATIC_TAPS) or kept_as(p, kept_in_float32(text)) for p in paths)
        spec = replace(spec, kv_conv=taps, kv_conv_bytes=4 if fp32 else None)
        used |= set(paths)
    read.attention, read.attention_extra = spec, extra + rest_of(child, used)
    _qsa_indexer(child, read)
    _block_indexer(child, k if k is not None else q, read)
    beside = {n for n in _beside(child, read.attention_extra) if _may_cache(child, n, used)}
    if read.index_keys:  # an indexer read above: its keys sized
        beside.discard("indexer")
    _uncached(child, beside, read)
    relative = [(n, m) for n, m in child.named_modules() if n and isinstance(getattr(m, "rel_extent", None), int) and n_params(m)]
    for n, m in relative:  # Inkling's relative-position logits: a matmul a token no projection counts
        why = N_("the FLOPs of {cls}'s relative-position logits ({path}: each query's against {extent} distances), beyond its projections")
        read.flops_left_out.append(Message(why, cls=type(child).__name__, path=n, extent=f"{m.rel_extent:,}"))
    read.window = _window(child)
    one, many = N_("attention: {heads} heads × {head_dim}, {kv} KV head"), N_("attention: {heads} heads × {head_dim}, {kv} KV heads")
    shape = one if kv == 1 else many
    said = Message(shape, heads=f"{heads:,}", head_dim=f"{head_dim:,}", kv=f"{kv:,}")
    if spec.v_head_dim is not None:
        said = Message.join(said, Message(N_(", values {v} per head"), v=f"{v_head_dim:,}"))
    if values_from_keys:
        said = Message.join(said, Message(N_(", values from k_proj")))
    window_said = Message(N_(", window {window}"), window=f"{read.window:,}") if read.window else ""
    shared_said = Message(N_(", an earlier layer's keys and values")) if read.kv_shared else ""
    read.said.append(Message.join(said, window_said, shared_said))


def query_experts(d: int, child: nn.Module) -> tuple[nn.Module, int, int] | None:
    """A mixture of attention heads (JetMoE's MoA): one kv_proj every token runs, and `experts`
    holding query-and-output experts as a pair of containers (input_linear to a query of the KV
    heads' width, output_linear back to d), a router picking some a token: (experts, their count,
    a query's width). None for any other attention."""
    children = dict(child.named_children())
    kv, experts = children.get("kv_proj"), children.get("experts")
    paired = paired_experts(d, experts) if experts is not None else None
    if not isinstance(kv, nn.Linear) or experts is None or paired is None or paired[2] or kv.out_features != 2 * paired[1]:
        return None
    return experts, paired[0], paired[1]


def mixture_of_heads(d: int, child: nn.Module, heads: tuple[nn.Module, int, int], read: LayerRead) -> None:
    """JetMoE's attention: keys and values of its KV heads from kv_proj, a query per pick from the
    top_k experts a router picks of `experts`, each a query of the KV heads' width (so heads = KV
    heads × top_k, each query head scoring its KV head) and an output back to d, summed with their
    gates, and a bias. The AttentionSpec is what a token runs (its picks' queries and outputs); the
    experts it does not pick are held beside, out of its active count, read where other tokens pick them."""
    experts, count, width = heads
    picks, head_dim = getattr(child, "top_k", None), getattr(child, "head_dim", None)
    if not isinstance(picks, int) or not isinstance(head_dim, int) or min(picks, head_dim) < 1 or width % head_dim:
        raise Unread(Message(N_("{cls} names no top_k and head_dim its experts' width divides into"), cls=type(child).__name__))
    kv_heads = width // head_dim
    if not picks < count:
        raise Unread(Message(N_("{cls} picks all its {count} experts"), cls=type(child).__name__, count=f"{count:,}"))
    bias = dict(experts.named_parameters(recurse=False)).get("bias")
    if bias is not None and tuple(bias.shape) != (d,):
        raise Unread(Message(N_("{cls}'s experts hold a bias of other than hidden_size"), cls=type(child).__name__))
    read.attention = AttentionSpec(d_model=d, n_heads=kv_heads * picks, n_kv_heads=kv_heads, head_dim=head_dim, qkv_bias=False,
                                   o_bias=bias is not None)  # fmt: skip
    router = [(n, m) for n, m in experts.named_children() if n not in PAIRED_EXPERTS]
    read.attention_extra = tuple(t for n, m in router for t in named_tensors(f"experts.{n}", m))
    # one expert's query and output projections, held count − picks times beside the picks'
    read.attention_experts = (
        ParamTensor(noted("experts.input_linear.weight", NOT_PICKED), (width, d)),
        ParamTensor(noted("experts.output_linear.weight", NOT_PICKED), (d, width)),
    )
    read.attention_routing = (count, picks)
    said = N_("attention: {heads} heads × {head_dim}, {kv} KV heads, the queries and outputs of {picks} of {count} experts a token")
    read.said.append(Message(said, heads=f"{kv_heads * picks:,}", head_dim=f"{head_dim:,}", kv=f"{kv_heads:,}", picks=picks,
                             count=f"{count:,}"))  # fmt: skip


def _qsa_indexer(child: nn.Module, read: LayerRead) -> None:
    """Qwen4-Exp's QSA indexer beside a softmax attention: one key of index_head_dim a token (its
    index_kv_heads, one), cached beside K and V (transformers' cache.update_indexer); the attention
    then reads the token_budget tokens it picks and the compress_ratio − 1 of the block not yet
    closed. Its index_n_heads score blocks of compress_ratio keys averaged, a block's share a key."""
    indexer = getattr(child, "indexer", None)
    keys = ("index_n_heads", "index_head_dim", "index_kv_heads", "token_budget", "compress_ratio")
    sizes = positive_ints([getattr(indexer, k, None) for k in keys])
    if not isinstance(getattr(indexer, "index_qk_proj", None), nn.Linear) or sizes is None:
        return
    heads, width, kv_heads, budget, ratio = sizes
    read.index_keys, read.index_topk, read.index_block, read.index_heads = width * kv_heads, budget + ratio - 1, ratio, heads
    read.said.append(Message(N_("indexer keys {width} per token, scored in blocks of {ratio}"), width=f"{width * kv_heads:,}",
                             ratio=f"{ratio:,}"))  # fmt: skip


def _block_indexer(child: nn.Module, k: nn.Linear, read: LayerRead) -> None:
    """MiniMax-M3's MSA indexer beside a softmax attention: one key of head_dim a token, cached
    beside K and V (the cache layer's update_index); its num_heads score every key, and the
    attention reads the topk_blocks blocks of block_size keys they pick. A layer whose indexer
    slot is empty (MiniMax-M3's full layers) reads every key."""
    if not hasattr(child, "indexer") or hasattr(child, "skip_topk"):  # GLM-5's shared layers reuse a top-k
        return
    indexer = child.indexer
    if indexer is None:
        read.full_read = True
        return
    sizes = positive_ints([getattr(indexer, n, None) for n in ("head_dim", "num_heads", "block_size", "topk_blocks")])
    keys = getattr(indexer, "k_proj", None)
    if sizes is None or not isinstance(keys, nn.Linear) or keys.out_features != sizes[0] or keys.in_features != k.in_features:
        return
    width, heads, block, topk = sizes
    read.index_keys, read.index_heads, read.index_topk, read.index_select_block = width, heads, topk * block, block
    said = N_("indexer keys {width} per token, the top {topk} blocks of {block} read")
    read.said.append(Message(said, width=f"{width:,}", topk=f"{topk:,}", block=f"{block:,}"))


def _attention_spec(d: int, shape: tuple[int, int, int], q: nn.Linear, o: nn.Linear, **more: Any) -> AttentionSpec:
    """An attention of `shape` (heads, KV heads, head width), its biases as its q_proj and o_proj hold them."""
    heads, kv, head_dim = shape
    return AttentionSpec(d_model=d, n_heads=heads, n_kv_heads=kv, head_dim=head_dim, qkv_bias=q.bias is not None,
                         o_bias=o.bias is not None, **more)  # fmt: skip


def cca_projection(child: nn.Module) -> tuple[str, nn.Module] | None:
    """A projection module inside the attention that holds the queries' and keys' Linears, the
    values' in two halves (one of the current token, one delayed a token) and convolutions over
    the queries and keys (Zaya's ZayaCCAProjection, compressed convolutional attention): its path."""
    for name, m in child.named_children():
        parts = dict(m.named_children())
        halves = [n for n, c in parts.items() if n.startswith("v_proj_") and isinstance(c, nn.Linear)]
        convs = [c for c in parts.values() if isinstance(c, nn.Conv1d)]
        if {"q_proj", "k_proj"} <= set(parts) and len(halves) == 2 and convs:
            return name, m
    return None


def cca_attention(d: int, text: PretrainedConfig, child: nn.Module, found: tuple[str, nn.Module], read: LayerRead) -> None:
    """Compressed convolutional attention (Zaya's): q_proj and k_proj, the values in a current and
    a delayed half, two convolutions in a row over the queries' and keys' channels, o_proj. Counted
    as an attention of those projections (the halves as one v_proj) and its convolutions beside
    them, each a multiply-add of its weights a token as a Linear's; decoding keeps K and V of every
    token, and beside them the convolutions' latest inputs and the last token's delayed value half."""
    o = linear_named(dict(child.named_modules()), "o_proj")
    path, proj = found
    parts = dict(proj.named_children())
    q, k = parts["q_proj"], parts["k_proj"]
    halves = [c for n, c in parts.items() if n.startswith("v_proj_") and isinstance(c, nn.Linear)]
    convs = [(n, c) for n, c in parts.items() if isinstance(c, nn.Conv1d)]
    if not isinstance(q, nn.Linear) or not isinstance(k, nn.Linear) or o is None:
        raise Unread(Message(N_("no q, k, v and o projections")))
    heads, kv = _heads(text, child)
    head_dim = k.out_features // kv
    if k.out_features % kv or q.out_features != heads * head_dim or sum(h.out_features for h in halves) != k.out_features:
        raise Unread(Message(N_("q_proj's {q} outputs and o_proj's {o} inputs are not {heads} heads × {head_dim}"),
                              q=f"{q.out_features:,}", o=f"{o.in_features:,}", heads=f"{heads:,}", head_dim=f"{head_dim:,}"))  # fmt: skip
    channels = q.out_features + k.out_features
    if any(c.in_channels != channels or c.out_channels != channels for _n, c in convs):
        raise Unread(Message(N_("{cls}'s convolutions are not over its queries' and keys' channels"), cls=type(proj).__name__))
    window = sum(int(c.kernel_size[0]) - 1 for _n, c in convs)  # each convolution's taps − 1, in a row
    delayed = min(h.out_features for h in halves)  # the delayed half: the last token's, kept
    spec = _attention_spec(d, (heads, kv, head_dim), q, o, side_state=window * channels, carried_values=delayed)
    # A convolution's weight is named as a Linear's: a token's multiply-adds are its weight's elements.
    conv_tensors = tuple(ParamTensor(f"{path}.{n}.{leaf}", tuple(p.shape)) for n, c in convs for leaf, p in c.named_parameters())
    used = {f"{path}.{n}" for n in ("q_proj", "k_proj", *(n for n, c in parts.items() if any(c is h for h in halves)))}
    used |= {f"{path}.{n}" for n, _c in convs} | {"o_proj"}
    read.attention, read.attention_extra = spec, conv_tensors + rest_of(child, used)
    read.window = _window(child)
    said = Message(N_("compressed convolutional attention: {heads} heads × {head_dim}, {kv} KV heads, convolutions over {channels} "
                      "channels"), heads=f"{heads:,}", head_dim=f"{head_dim:,}", kv=f"{kv:,}", channels=f"{channels:,}")  # fmt: skip
    window_said = Message(N_(", window {window}"), window=f"{read.window:,}") if read.window else ""
    read.said.append(Message.join(said, window_said))


def _window(child: nn.Module) -> int | None:
    """The attention module's own sliding_window (None in a layer that attends to every key); a
    GPT-Neo local layer's window_size, which its mask keeps (transformers' cache keeps every key)."""
    window = getattr(child, "sliding_window", None)
    if window is None and getattr(child, "attention_type", None) == "local":
        window = getattr(getattr(child, "config", None), "window_size", None)
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None


def _split_qkv(text: PretrainedConfig, child: nn.Module, fused: nn.Linear, o: nn.Linear) -> tuple[nn.Linear, nn.Linear, nn.Linear]:
    """A fused projection as the three it holds, each of its own width: heads × head width for the
    queries, KV heads × head width for the keys and for the values, the head width o_proj's inputs
    over the heads and the KV heads what the rest of the width holds (a config's num_key_value_heads
    is not read by every model that fuses: MPT's and BLOOM's attend with all heads). Built on meta,
    as the layer is: only their shapes and biases are read."""
    heads, _kv = _heads(text, child)
    head_dim, rest = divmod(o.in_features, heads)
    kv, odd = divmod(fused.out_features // max(head_dim, 1) - heads, 2)
    if rest or odd or fused.out_features % max(head_dim, 1) or not 0 < kv <= heads or heads % kv:
        why = N_("a fused qkv projection of {outputs} outputs that is not {heads} heads and twice some KV heads × {head_dim}")
        raise Unread(Message(why, outputs=f"{fused.out_features:,}", heads=f"{heads:,}", head_dim=f"{head_dim:,}"))
    bias = fused.bias is not None
    with torch.device("meta"):
        widths = (heads * head_dim, kv * head_dim, kv * head_dim)
        q, k, v = (nn.Linear(fused.in_features, w, bias=bias) for w in widths)
    return q, k, v


def latent_attention(d: int, text: PretrainedConfig, child: nn.Module, read: LayerRead) -> None:
    m = dict(child.named_modules())
    kv_a, kv_b = linear_named(m, "kv_a_proj_with_mqa"), linear_named(m, "kv_b_proj")
    if kv_a is None or kv_b is None:
        raise Unread(Message(N_("no kv_a_proj_with_mqa and kv_b_proj")))

    def of(key: str) -> Any:
        value = getattr(child, key, None)
        return value if value is not None else getattr(text, key, None)

    q_a, q_gate = linear_named(m, "q_a_proj"), linear_named(m, "q_gate_proj")
    spec = LatentAttentionSpec(
        d_model=d,
        n_heads=int(of("num_heads") or text.num_attention_heads),
        kv_lora_rank=int(of("kv_lora_rank")),
        qk_nope_head_dim=int(of("qk_nope_head_dim")),
        qk_rope_head_dim=int(of("qk_rope_head_dim")),
        v_head_dim=int(of("v_head_dim")),
        q_lora_rank=q_a.out_features if q_a is not None else None,
        bias=kv_a.bias is not None,
        q_gate=q_gate is not None and "q_b_proj" not in m,  # A.X K2's: the queries and an output gate from one projection
    )
    if spec.q_gate and q_gate is not None:
        (shape,) = [(rows, cols) for name, rows, cols, _bias in spec.projections() if name == "q_gate_proj"]
        if (q_gate.out_features, q_gate.in_features) != shape:
            why = N_("a q_gate_proj of {rows:,} × {cols:,}, not the queries and an output gate ({want_rows:,} × {want_cols:,}) "
                     "from the latent and its norm")  # fmt: skip
            raise Unread(Message(why, rows=q_gate.out_features, cols=q_gate.in_features, want_rows=shape[0], want_cols=shape[1]))
    own = ("q_a_proj", "q_a_layernorm", "q_b_proj", "q_gate_proj", "q_proj", "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj")
    rest = rest_of(child, {n for n in own if n in m})
    read.attention, read.attention_extra = spec, rest
    read.window = _window(child)  # dots3's sliding layers keep their window's latents alone
    said = Message(N_("latent attention: {heads} heads, KV latent {latent} + rope {rope}"),
                   heads=f"{spec.n_heads:,}", latent=f"{spec.kv_lora_rank:,}", rope=f"{spec.qk_rope_head_dim:,}")  # fmt: skip
    window_said = Message(N_(", window {window}"), window=f"{read.window:,}") if read.window else ""
    read.said.append(Message.join(said, window_said))
    beside = _beside(child, rest)
    indexer = getattr(child, "indexer", None)
    wk = getattr(indexer, "wk", None)
    if "indexer" in beside and isinstance(wk, nn.Linear) and wk.out_features == getattr(indexer, "head_dim", None):
        # DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5): one key of index_head_dim a token,
        # cached beside the latent (transformers' cache.update_indexer); a layer whose indexer_types
        # says "shared" builds none and caches none.
        read.index_keys = wk.out_features
        read.index_heads, read.index_topk = int(getattr(indexer, "n_heads", 0)) or None, int(getattr(indexer, "index_topk", 0)) or None
        beside.remove("indexer")
        read.said.append(Message(N_("indexer keys {width} per token"), width=f"{wk.out_features:,}"))
    _uncached(child, beside, read)


def _beside(child: nn.Module, rest: tuple[ParamTensor, ...]) -> set[str]:
    """The attention's children holding tensors beside its own parts that may keep something across
    tokens: an output gate (a Linear), a norm or a tensor of the attention's own (its sinks) keeps nothing."""
    children = dict(child.named_children())
    tops = {t.name.split(".")[0].split(" ")[0] for t in rest}
    return {n for n in tops if not _keeps_nothing(children.get(n), n)}


def _may_cache(child: nn.Module, name: str, used: set[str]) -> bool:
    """Whether a softmax attention's module `name` may keep something across tokens that ffn has not
    sized: an indexer or compressor of its own, or a convolution whose window the read above did not
    size (a wrapper of projections, norms and a relative-position table keeps nothing: Inkling's)."""
    module = getattr(child, name, None)
    if not isinstance(module, nn.Module):
        return False
    for sub, m in module.named_modules():
        path = f"{name}.{sub}" if sub else name
        if any(path == u or path.startswith(u + ".") for u in used):
            continue
        if isinstance(m, (nn.Conv1d, nn.Conv2d)) or any(w in type(m).__name__ for w in ("Indexer", "Compressor")):
            return True
    return False


def _uncached(child: nn.Module, beside: set[str], read: LayerRead) -> None:
    """Name what ffn does not size: whatever the attention's other modules keep while decoding."""
    if beside:
        said = N_("what {modules} of {cls} caches while decoding (its parameters are counted; any cache of its own is not sized)")
        read.left_out.append(Message(said, modules=", ".join(sorted(beside)), cls=type(child).__name__))


def _keeps_nothing(module: nn.Module | None, name: str) -> bool:
    """Whether a module beside an attention's own keeps nothing while decoding: none (a tensor of the
    attention itself), a Linear, or a norm."""
    return module is None or isinstance(module, nn.Linear) or attribute((Owner(name, type(module).__name__),))[0] == "norm"


def is_compressed(child: nn.Module) -> bool:
    """DeepSeek-V4's attention: one shared key-and-value projection, a sliding window, and a
    compressor slot (None in a layer of the window alone)."""
    return hasattr(child, "compressor") and isinstance(getattr(child, "kv_proj", None), nn.Linear) and hasattr(child, "sliding_window")


def compressed_attention(d: int, child: nn.Module, read: LayerRead) -> None:
    """DeepSeek-V4's attention by its modules: heads and head width, the window, the compressor's
    rate and series, the indexer's heads, width and top-k; its tensors counted as built."""
    a, kv = vars(child), getattr(child, "kv_proj", None)
    widths = [a.get(k) for k in ("num_heads", "head_dim", "sliding_window")]
    heads, head_dim, window = (v if isinstance(v, int) and not isinstance(v, bool) else 0 for v in widths)
    if not (heads and head_dim and window) or not isinstance(kv, nn.Linear) or kv.out_features != head_dim:
        raise Unread(Message(N_("a compressed attention without one key-and-value head of head_dim and a sliding_window")))
    compressor, rate, overlap = child.compressor, 0, False
    index_heads = index_dim = topk = 0
    if compressor is not None:
        said_rate = getattr(compressor, "compress_rate", None)
        rate = said_rate if isinstance(said_rate, int) and not isinstance(said_rate, bool) else 0
        proj = getattr(compressor, "kv_proj", None)
        if not rate or not isinstance(proj, nn.Linear) or proj.out_features not in (head_dim, 2 * head_dim):
            raise Unread(Message(N_("a compressor without a compress_rate and a kv_proj of one or two head widths")))
        overlap = proj.out_features == 2 * head_dim
        indexer = getattr(compressor, "indexer", None)
        if indexer is not None:
            index_heads, index_dim, topk = (int(getattr(indexer, k, 0) or 0) for k in ("num_heads", "head_dim", "index_topk"))
            if not (index_heads and index_dim and topk):
                raise Unread(Message(N_("an indexer without its heads, head width and top-k")))
    spec = CompressedAttentionSpec(d, heads, head_dim, window, rest_of(child, set()), rate, overlap, index_heads, index_dim, topk)
    read.attention = spec
    read.said.append(compressed_summary(spec))


def image_tiles(hf_config: PretrainedConfig) -> tuple[int, int] | None:
    """The tiles an image is cut into at most and the tokens the vision tower hands on for each
    (Llama 3.2 Vision's: max_num_tiles, and (image_size / patch_size)² patches plus its class
    token); None where the config does not say."""
    vision = getattr(hf_config, "vision_config", None)
    sizes = [getattr(vision, k, None) for k in ("max_num_tiles", "image_size", "patch_size")]
    said = [v for v in sizes if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    if len(said) != len(sizes):
        return None
    tiles, image, patch = said
    return tiles, (image // patch) ** 2 + 1


def encoder_tokens(seq2seq: EncoderDecoder) -> Source:
    """The encoder's output a decoder layer attends to: one 'tile' of the most tokens it hands on."""
    return Source("encoder", (1, seq2seq.source_tokens) if seq2seq.source_tokens else None, fixed=seq2seq.fixed)


@dataclass(frozen=True)
class Source:
    """What a cross-attention attends to: an image of the most `tiles` (tiles, tokens a tile), or
    the encoder's output (one tile of its most tokens); `tiles` None where the config does not say."""

    kind: Literal["image", "encoder"]
    tiles: tuple[int, int] | None
    fixed: bool = False  # an encoder that always hands on its most (Whisper's): no --source-len


def attends_to_the_source(child: nn.Module) -> bool:
    """An attention whose forward takes the encoder's output beside its own tokens (T5Gemma 2's
    merged attention): one set of projections over both."""
    return "encoder_hidden_states" in inspect.signature(child.forward).parameters


def merged_cross_attention(child: nn.Module, read: LayerRead, source: Source) -> None:
    """The encoder's output, attended by the layer's own attention beside its tokens (T5Gemma 2's
    merged attention): a cross-attention that holds no tensor of its own, its keys and values
    projected by the same k_proj and v_proj once a source, a token's queries scoring them beside
    its own keys; kept for the encoder's most tokens, or sized by --source-len."""
    a = read.attention
    if not isinstance(a, AttentionSpec):
        raise Unread(Message(N_("an attention over the encoder's output beside its own tokens, of a shape ffn does not size")))
    kind = Message(N_("cross-attention over the encoder's output, through the layer's own attention"))
    read.said.append(Message(N_("{kind}: its projections, k and v once a source"), kind=kind))
    tiles = source.tiles or (1, 0)  # 0 tokens: a source of a length the config does not say
    scan = SourceAttention(a.heads, a.kv_heads, a.head_width, *tiles, source="encoder", fixed=source.fixed)
    read.mixer = LinearMixer(kind, type(child).__name__, (), (), 0, read.layers, scan=scan, state_sized=source.tiles is not None)


def cross_attention(child: nn.Module, read: LayerRead, source: Source) -> None:
    """An attention over another input's tokens (an image's, Llama 3.2 Vision's, in layers of its
    own among the text's; the encoder's output, in an encoder-decoder's decoder layers beside their
    self-attention): its tensors as built; a token decoded runs its queries and output (q_proj,
    o_proj) and scores the input's keys, while those keys and values are projected once when the
    input arrives. A sequence keeps them for one input of the most `source.tiles` (tiles, tokens a
    tile); where the config does not say, they are named as left out, never counted as attention
    over the text."""
    name = type(child).__name__
    m = dict(child.named_modules())
    q, k, o = linear_named(m, *_Q_NAMES), linear_named(m, "k_proj"), linear_named(m, "o_proj", "out_proj")
    head_dim = vars(child).get("head_dim")
    if q is None or o is None:
        raise Unread(Message(N_("no q and o projections")))
    tensors = rest_of(child, set())
    flops = 2 * (q.weight.numel() + o.weight.numel())
    image = source.kind == "image"
    kind = Message(N_("cross-attention over an image's tokens") if image else N_("cross-attention over the encoder's output"))
    runs = N_("{kind}: q and o a text token, k and v once an image") if image else N_("{kind}: q and o a token, k and v once a source")
    read.said.append(Message(runs, kind=kind))
    width = head_dim if isinstance(head_dim, int) and head_dim > 0 else 0
    tiles = source.tiles
    shaped = k is not None and width and not q.out_features % width and not k.out_features % width
    if not image and tiles is None and shaped and k is not None:  # an encoder's output of a length the config does not say
        on_source = tuple(t.name for t in tensors if re.match(r"(k_proj|v_proj|k_norm)\b", t.name))
        scan = SourceAttention(q.out_features // width, k.out_features // width, width, 1, 0, on_source=on_source, source="encoder")
        read.mixer = LinearMixer(kind, name, tensors, (), flops, read.layers, scan=scan, state_sized=False)
        return
    if tiles is None or not shaped or k is None:
        read.mixer = LinearMixer(kind, name, tensors, (), flops, read.layers, state_sized=False)
        why = N_("the keys and values {name} keeps of an image's tokens, their projections and its scores over them: they run on "
                 "the image, whose tokens ffn does not size")  # fmt: skip
        if not image:  # an encoder's output whose heads ffn cannot read off the module
            why = N_("the keys and values {name} keeps of the encoder's output, and its scores over them: ffn cannot read its "
                     "heads' width")  # fmt: skip
        read.left_out.append(Message(why, name=name))
        return
    on_source = tuple(t.name for t in tensors if re.match(r"(k_proj|v_proj|k_norm)\b", t.name))  # the keys' and values'
    scan = SourceAttention(
        q.out_features // width, k.out_features // width, width, *tiles, on_source=on_source, source=source.kind, fixed=source.fixed
    )
    read.mixer = LinearMixer(kind, name, tensors, (), flops, read.layers, scan=scan)
    if image:  # an encoder's output is one a sequence: read_layout's note says how long
        why = N_("the keys and values of more than one image of {tiles} tiles ({tokens} tokens) a sequence; the projections to "
                 "them, run once an image, and the vision tower")  # fmt: skip
        read.left_out.append(Message(why, tiles=scan.tiles, tokens=f"{scan.tokens:,}"))


def _kv_convs(
    modules: Mapping[str, nn.Module], k: nn.Linear | None, v: nn.Linear | None, values_from_keys: bool
) -> tuple[int, tuple[str, ...]] | None:
    """A depthwise convolution over the keys' channels and one over the values', of one kernel
    width, inside the attention (Inkling's k_sconv and v_sconv; Inkling 2's k_proj.sconv.conv1d):
    (taps, the paths of their tensors' modules, or of the tensors). A dynamic one's static taps,
    [taps, channels] (Inkling 2's full layers, which add taps projected from each token by a
    weight_proj, a Linear beside them), are its convolution."""
    convs = [(n, int(c.in_channels), int(c.kernel_size[0]), c.bias is None) for n, c in depthwise_convs(modules)]
    convs += [(f"{n}{_STATIC_TAPS}", int(w.shape[1]), int(w.shape[0]), True) for n, w in _static_taps(modules)]
    if len(convs) != 2 or k is None or v is None or values_from_keys:
        return None
    widths = sorted(width for _n, width, _t, _b in convs)
    taps = {t for _n, _w, t, _b in convs}
    if widths != sorted((k.out_features, v.out_features)) or len(taps) != 1 or not all(unbiased for *_x, unbiased in convs):
        return None
    return taps.pop(), tuple(n for n, *_x in convs)


def _static_taps(modules: Mapping[str, nn.Module]) -> list[tuple[str, nn.Parameter]]:
    """A dynamic short convolution's static taps among `modules`: its static_weight of [taps, channels]
    beside the Linear that projects each token's own taps (Inkling 2's weight_proj)."""
    found = []
    for n, m in modules.items():
        weight = getattr(m, "static_weight", None)
        if isinstance(weight, nn.Parameter) and weight.dim() == 2 and isinstance(getattr(m, "weight_proj", None), nn.Linear):
            found.append((n, weight))
    return found


def is_attention(child: nn.Module) -> bool:
    """Softmax attention (latent or not), by its projections; not a mixer with a conv."""
    modules = dict(child.named_modules())
    # A fused projection is read as softmax attention's only in a class named so (MPT's MptAttention).
    cls = type(child).__name__
    fused = isinstance(linear_named(modules, *_QKV_NAMES), nn.Linear) and cls.endswith("Attention")
    queries = any(n in modules for n in _Q_NAMES) or fused
    softmax = queries and "conv1d" not in modules and not _LINEAR_ATTENTION.search(cls) and not is_cross(child)
    return "kv_a_proj_with_mqa" in modules or is_compressed(child) or softmax or cca_projection(child) is not None


def is_cross(child: nn.Module) -> bool:
    """An attention over another input's tokens (Llama 3.2 Vision's MllamaTextCrossAttention over an
    image's), not over the text's own."""
    return "CrossAttention" in type(child).__name__


def inner_attention(child: nn.Module) -> nn.Module:
    """An attention module that only wraps another (GPT-Neo's GPTNeoAttention around its
    GPTNeoSelfAttention): the one that holds the projections."""
    if is_attention(child) or list(child.parameters(recurse=False)):
        return child
    inner = [c for _n, c in child.named_children() if n_params(c)]
    return inner[0] if len(inner) == 1 and is_attention(inner[0]) else child
