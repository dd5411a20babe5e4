"""What decoding keeps per sequence, layer kind by layer kind, between one token and the next: a
full-attention layer's KV cache grows with the context, a sliding-window (or chunked) layer's
stops at its window less one (the new token's own keys join the w − 1 latest), a mixer's state
is fixed (Gated DeltaNet's heads × key width × value width and Mamba-2's heads × head width ×
state size, each with its convolution's kernel − 1 latest inputs; a short convolution's window
alone); a layer that reuses an earlier layer's keys and values (Gemma 3n, Gemma 4's E2B and
E4B) keeps none, in a row of its own. A convolution beside a layer's parts keeps its (taps − 1) ·
dilation latest inputs (Qwen4-Exp's PLE), in a row of its own, whole on each GPU. A mixer read
from transformers' modules whose state ffn does not know is a row of its own, not sized. The checkpoint's multi-token-prediction layers,
which a server decoding speculatively runs for each token, keep a cache of the last layer's kind
(DeepSeek-V4's of the window alone), in rows of their own ("MTP: …").
Elements, priced at the cache dtype's bytes by the caller (`bytes_`), but a recurrent state whose
dtype the config names (Nemotron 3's float32 SSM state), priced at its own. Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ffn_cli.attention import AttentionSpec
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.costs.roofline.model_pass import kv_width
from ffn_cli.i18n import N_, Message
from ffn_cli.models.layout import SHARED_KV_ATTENTION
from ffn_cli.models.mixers import SourceAttention
from ffn_cli.models.spec import ModelSpec

__all__ = ["CONV_BESIDE", "KindState", "decode_state"]

CONV_BESIDE = N_("convolution beside the layer's parts")


@dataclass(frozen=True)
class KindState:
    """One layer kind: how many layers, and the elements each keeps at the context."""

    kind: str  # an English id: 'attention', 'attention, sliding 4,096', 'Gated DeltaNet'
    layers: int
    elements_per_layer: int
    tokens: int | None  # the tokens an attention layer caches at this context; None for a fixed state
    detail: Message
    width: int = 0  # attention: elements a cached token takes (K and V)
    window: int | None = None  # attention: the sliding window or chunk that caps its cache
    kv_heads: int = 0  # attention: the KV heads --tp splits its cache over (0: whole on each GPU, MLA's latent)
    recurrent: int = 0  # a mixer: its recurrent state's elements …
    conv: int = 0  # … and its convolution's window
    recurrent_bytes: int | None = None  # bytes of a recurrent element where the config names its dtype
    conv_bytes: int | None = None  # bytes of a conv-window element where the model keeps its convs in float32
    sized: bool = True  # False: a mixer whose state ffn does not know, named and counted as none
    rate: int = 0  # DeepSeek-V4's compressed attention: the tokens pooled into one entry it keeps …
    entries: int = 0  # … the entries it keeps, each `width` wide, and each indexer key's width beside one
    index_width: int = 0
    compressed: bool = False  # DeepSeek-V4's attention: one key-and-value head, K = V held once
    # what an attention row keeps a token: K and V, MLA's latent (with its rotary key), or a DSA indexer's key
    keeps: Literal["kv", "latent", "index"] = "kv"
    mtp: bool = False  # a multi-token-prediction layer's, run only by a server decoding speculatively
    index_block: int = 1  # an indexer's: keys a block it scores (QSA's compress_ratio; DSA's 1)
    msa: bool = False  # an indexer that picks blocks of keys (MiniMax-M3's)
    # cross-attention: the tokens of an image (or of the encoder's output) whose K and V (`width` a token) it keeps, whatever the context
    # (0 for an encoder's output of a length the config does not say: not sized, named as left out); None: no cross-attention
    source_tokens: int = 0
    source: Literal["image", "encoder"] | None = None
    whole: bool = False  # a mixer over the residual stream's channels: whole on each GPU, not split over --tp

    @property
    def elements(self) -> int:
        return self.layers * self.elements_per_layer

    def bytes_per_layer(self, act_bytes: int) -> int:
        """One layer's bytes: every element at the cache dtype's `act_bytes`, but a recurrent
        state whose dtype the config names (Nemotron 3's float32 SSM state) and a conv window the
        model keeps in float32 (Inkling's)."""
        rest = self.elements_per_layer - self.recurrent - self.conv
        return self.recurrent * (self.recurrent_bytes or act_bytes) + self.conv * (self.conv_bytes or act_bytes) + rest * act_bytes

    def bytes_(self, act_bytes: int) -> int:
        return self.layers * self.bytes_per_layer(act_bytes)


_Reach = tuple[str, int | None, int, int, int, int | None, int]


def _reach(spec: ModelSpec, windows: Sequence[int | None], chunks: Sequence[int | None], i: int) -> _Reach:
    """Layer i's attention as the cache sees it: how far it reaches (full, sliding, chunked) and
    its cap, the elements a token takes, the KV heads --tp splits them over (0: MLA's latent), and
    the window its key and value convolutions keep with the bytes of an element (Inkling's), and the
    values it carries to the next token (Zaya's delayed half)."""
    window, chunk = windows[i], chunks[i] if chunks else None
    how, cap = ("sliding", window) if window else ("chunked", chunk) if chunk else ("full", None)
    a = spec.attention_of(i)
    if not isinstance(a, AttentionSpec):  # MLA's latent (a compressed layer has rows of its own)
        return how, cap, kv_width(spec, i), 0, 0, None, 0
    return how, cap, kv_width(spec, i), a.kv_heads, a.conv_window, a.kv_conv_bytes, a.carried_values


def _reach_row(key: _Reach, count: int, context: int, named_by_width: bool) -> KindState:
    how, cap, width, heads, conv, conv_bytes, carried = key
    tokens = min(context, cap - 1) if cap else context
    if how == "sliding":
        kind = Message(N_("attention, sliding {window}"), window=f"{cap:,}")
    elif how == "chunked":
        kind = Message(N_("attention, chunks of {chunk}"), chunk=f"{cap:,}")
    else:
        kind = Message(N_("attention"))
    if named_by_width:  # layers of one reach and two widths: each row named by its width
        kind = Message(N_("{kind}, {width} a token"), kind=kind, width=f"{width:,}")
    # MLA keeps its latent (with the rotary key) a token, not K and V: no heads (0) to split over --tp
    what = N_("{tokens} tokens × {width} (latent)") if not heads else N_("{tokens} tokens × {width} (K and V)")
    detail = Message(what, tokens=f"{tokens:,}", width=f"{width:,}")
    if conv:  # the key and value convolutions' latest inputs, beside the cache (Inkling's)
        words = N_(" + conv {conv} at {bytes} B") if conv_bytes else N_(" + conv {conv}")
        detail = Message.join(detail, Message(words, conv=f"{conv:,}", bytes=conv_bytes))
    if carried:  # the last token's delayed value half, carried to the next (Zaya's)
        detail = Message.join(detail, Message(N_(" + state {n}"), n=f"{carried:,}"))
    keeps: Literal["kv", "latent"] = "kv" if heads else "latent"
    return KindState(kind, count, tokens * width + conv + carried, tokens, detail, width=width, window=cap, kv_heads=heads,
                     conv=conv, conv_bytes=conv_bytes, keeps=keeps, recurrent=carried)  # fmt: skip


def _indexer_row(spec: ModelSpec, layers: int, context: int) -> KindState:
    """A DSA indexer's keys (QSA's, where it scores blocks of them): one a token, no heads to split:
    whole on each GPU, as MLA's latent."""
    width = spec.index_key_width
    detail = Message(N_("{tokens} tokens × {width} (the indexer's keys)"), tokens=f"{context:,}", width=f"{width:,}")
    # QSA's scores blocks of keys; MSA's (MiniMax-M3's) picks blocks of keys it scores each; DSA's picks keys
    name = Message(N_("QSA indexer") if spec.index_block > 1 else N_("MSA indexer") if spec.index_select_block > 1 else N_("DSA indexer"))
    return KindState(name, layers, context * width, context, detail, width=width, keeps="index", index_block=spec.index_block,
                     msa=spec.index_select_block > 1)  # fmt: skip


def _attention_rows(
    spec: ModelSpec, windows: Sequence[int | None], chunks: Sequence[int | None], context: int, peak: bool
) -> list[KindState]:
    # One row a reach and width: Gemma 4's sliding layers and its full layers of wider heads apart.
    kept: dict[_Reach, int] = {}
    compressed: dict[CompressedAttentionSpec, int] = {}
    for i in spec.attention_layers:
        if i in spec.kv_shared_layers:  # reads an earlier layer's cache, keeps none
            continue
        if isinstance(c := spec.attention_of(i), CompressedAttentionSpec):
            compressed[c] = compressed.get(c, 0) + 1
            continue
        key = _reach(spec, windows, chunks, i)
        kept[key] = kept.get(key, 0) + 1
    reaches = [(how, cap) for how, cap, *_rest in kept]
    rows = [_reach_row(key, count, context, reaches.count(key[:2]) > 1) for key, count in kept.items()]
    rows += [_compressed_row(c, count, context, peak) for c, count in compressed.items()]
    shared = [i for i in spec.attention_layers if i in spec.kv_shared_layers]
    if shared:  # a row of their own, so that every layer is in the table: they read an earlier layer's cache
        detail = Message(N_("none: an earlier layer's keys and values"))
        rows.append(KindState(Message(SHARED_KV_ATTENTION), len(shared), 0, 0, detail))
    if spec.index_layers:
        rows.append(_indexer_row(spec, len(spec.index_layers), context))
    return rows


def _mtp_rows(
    spec: ModelSpec, windows: Sequence[int | None], chunks: Sequence[int | None], context: int, peak: bool, mtp: int
) -> list[KindState]:
    """What the multi-token-prediction layers keep while a server decodes speculatively with them:
    each is a layer of the last layer's attention (DeepSeek-V4's of the window alone, compress
    ratio 0), its DSA indexer's keys too."""
    last = spec.n_layers - 1
    a = spec.attention_of(last)
    if isinstance(a, CompressedAttentionSpec):
        row = _compressed_row(a.window_alone(), mtp, context, peak)
    else:
        row = _reach_row(_reach(spec, windows, chunks, last), mtp, context, False)
    rows = [row, _indexer_row(spec, mtp, context)] if last in spec.index_layers else [row]
    return [replace(r, kind=Message(N_("MTP: {kind}"), kind=r.kind), mtp=True) for r in rows]


def _compressed_row(c: CompressedAttentionSpec, layers: int, context: int, peak: bool) -> KindState:
    """DeepSeek-V4's layers of one kind: the window's keys (K = V, once), the pooled entries and
    the indexer's keys, the window not yet closed and CSA's overlap; one head, whole on every GPU.
    `peak`: the most held on the way to the context (what memory must hold to decode that far)."""
    tokens = min(context, c.window - 1)
    kind = Message(N_("{kind}, window {window}"), kind=c.kind, window=f"{c.window:,}")  # short: the table's first column
    detail = Message(N_("{tokens} tokens × {width} (K = V)"), tokens=f"{tokens:,}", width=f"{c.head_dim:,}")
    if c.rate:
        kind = Message(N_("{kind}, m = {rate}, window {window}"), kind=c.kind, rate=f"{c.rate:,}", window=f"{c.window:,}")
        entries = Message(N_(" + {n} entries × {width}"), n=f"{c.entries(context):,}", width=f"{c.head_dim:,}")
        index = Message(N_(" + {n} indexer keys × {width}"), n=f"{c.entries(context):,}", width=f"{c.index_dim:,}") if c.index_heads else ""
        pending = c.cached_elements(context) - tokens * c.head_dim - c.entries(context) * (c.head_dim + c.index_dim)
        rest = Message(N_(" + {n} buffered"), n=f"{pending:,}") if pending else ""  # the open window, CSA's overlap
        detail = Message.join(detail, entries, index, rest)
    elements = c.peak_elements(context) if peak else c.cached_elements(context)
    return KindState(kind, layers, elements, tokens, detail, width=c.head_dim, window=c.window, rate=c.rate, entries=c.entries(context),
                     index_width=c.index_dim, compressed=True)  # fmt: skip


def decode_state(
    spec: ModelSpec, windows: Sequence[int | None], chunks: Sequence[int | None], context: int, *, peak: bool = False, mtp: int = 0
) -> tuple[KindState, ...]:
    """Every layer kind's cache at `context` tokens, attention first, in elements; with `peak`, the
    most each holds on the way there (a compressed layer's cache shrinks as a window closes);
    the `mtp` multi-token-prediction layers' last."""
    rows = _attention_rows(spec, windows, chunks, context, peak)
    m = spec.mixer
    if m is not None and m.layers:
        detail = m.state_words() if m.state_sized else Message(N_("not sized: left out"))
        if isinstance(m.scan, SourceAttention):  # an image's (an encoder's) keys and values, split over --tp by KV head as attention's
            cross = m.scan
            width = 2 * cross.kv_heads * cross.head_dim
            rows.append(KindState(m.kind, len(m.layers), m.state_elements, None, detail, width=width, kv_heads=cross.kv_heads,
                                  source_tokens=cross.tokens, source=cross.source, sized=m.state_sized))  # fmt: skip
        else:
            rows.append(
                KindState(
                    m.kind,
                    len(m.layers),
                    m.state_elements,
                    None,
                    detail,
                    recurrent=m.recurrent_state_elements,
                    conv=m.conv_state_elements,
                    recurrent_bytes=m.state_dtype_bytes if m.scan is not None else None,
                    conv_bytes=m.conv_dtype_bytes,
                    sized=m.state_sized,
                    whole=m.whole_on_each_gpu,
                )
            )
    for e in spec.extras:  # a convolution beside a layer's parts (Qwen4-Exp's PLE), over the residual stream's copies
        if e.state:
            rows.append(KindState(CONV_BESIDE, len(spec.layers_of(e) or ()), e.state, None, Message(N_("conv {n}"), n=f"{e.state:,}"),
                                  conv=e.state, whole=True))  # fmt: skip
    if mtp:
        rows += _mtp_rows(spec, windows, chunks, context, peak, mtp)
    return tuple(rows)
