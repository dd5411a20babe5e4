"""What decoding keeps per sequence, by layer kind, as a table or JSON: the KV cache of the
attention layers (growing with the context, or capped at a window) and the fixed state of a
hybrid's mixer layers."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ffn_cli.costs.decode_state import KindState
from ffn_cli.i18n import _, shown, tidy
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_bytes

__all__ = ["decode_state_data", "decode_state_view"]


def decode_state_view(rows: tuple[KindState, ...], context: int, batches: list[int], act_bytes: int, *, tp: int = 1) -> FitTable:
    columns = [
        Col(_("layer kind"), "text", floor=26),
        Col(_("layers")),
        Col(_("each"), "text", drop=1),
        Col(_("per layer")),
        Col(_("all layers")),
    ]
    unsized = _("not sized")  # a mixer ffn counts tensor by tensor: its state is named as left out, never shown as 0 B
    cells: list[Any] = []
    for r in rows:
        each, every = (fmt_bytes(r.bytes_per_layer(act_bytes)), fmt_bytes(r.bytes_(act_bytes))) if r.sized else (unsized, unsized)
        cells.append([shown(r.kind), f"{r.layers:,}", shown(r.detail), each, every])
    total = sum(r.bytes_(act_bytes) for r in rows)
    cells += [None, [_("per sequence"), "", "", "", fmt_bytes(total)]]
    for batch in batches:
        if batch > 1:
            cells.append([_("batch {batch}").format(batch=f"{batch:,}"), "", "", "", fmt_bytes(batch * total)])
    title = _("what decoding keeps per sequence at context {n}, {bytes} B an element").format(n=f"{context:,}", bytes=act_bytes)
    if any(r.recurrent_bytes not in (None, act_bytes) or r.conv_bytes not in (None, act_bytes) for r in rows):
        title = _("what decoding keeps per sequence at context {n}, {bytes} B an element unless a row says otherwise").format(
            n=f"{context:,}", bytes=act_bytes
        )
    attends = [r for r in rows if r.tokens is not None and not r.compressed and r.width]
    kept = {r.keeps for r in attends}
    caption = _("attention keeps K and V of every token before the new one.") if "kv" in kept or not rows else ""
    if "kv" in kept and tp > 1:  # the rows are the model's: the memory of one GPU holds its heads' share
        caption += _(" The rows are the whole model's; each GPU of --tp {tp} keeps its share of the KV heads.").format(tp=tp)
        if any(0 < r.kv_heads < tp for r in attends):  # vLLM copies a KV head to tp / heads GPUs
            caption += _(" Where there are fewer KV heads than GPUs, each GPU keeps one, a head copied to several.")
    if any(r.conv for r in attends):
        caption += _(" Beside its cache an attention row keeps its convolutions' latest inputs (+ conv), whatever the context.")
    if any(r.recurrent for r in attends):
        caption += _(" + state: the values an attention row carries to the next token (Zaya's delayed value half).")
    if "latent" in kept:
        caption += _(" MLA keeps its latent and rotary key of every token before the new one, whole on every GPU.")
    if "index" in kept:
        qsa = any(r.keeps == "index" and r.index_block > 1 for r in attends)
        msa = any(r.keeps == "index" and r.msa for r in attends)
        caption += (
            _(" A QSA indexer keeps one key of every token, whole on every GPU, and scores them in blocks.")
            if qsa
            else _(" An MSA indexer keeps one key of every token, whole on every GPU; its attention reads the blocks it picks.")
            if msa
            else _(" A DSA indexer keeps one key of every token, whole on every GPU.")
        )
    caption = caption.lstrip()
    if any(r.window is not None for r in attends):
        caption += _(" A layer with a window of w tokens keeps only the w − 1 latest.")
    if any(r.compressed for r in rows):
        caption += _(
            " A compressed layer (DeepSeek-V4) keeps its window's w − 1 latest tokens, their keys once (K = V), and an"
            " entry for each m tokens it has seen (CSA: the indexer's key too), the tokens of a window not yet closed beside"
            " them; one head, whole on every GPU of --tp; the memory of one GPU counts the most it holds on the way to the"
            " context, before a window closes."
        )
    caption = caption.lstrip()
    if any(r.tokens is None and r.conv for r in rows):
        caption += _(" A mixer's state does not grow with the context; its conv keeps its kernel − 1 latest inputs.")
        if tp > 1 and any(r.whole for r in rows):
            caption += _(" A convolution over the residual stream is kept whole on every GPU.")
    elif any(r.tokens is None and r.source is None for r in rows):
        caption += _(" A mixer's state does not grow with the context.")
    if any(r.source_tokens and r.source == "image" for r in rows):
        caption += _(" A cross-attention layer keeps the keys and values of one image's tokens, whatever the context.")
    if any(r.source_tokens and r.source == "encoder" for r in rows):
        caption += _(" A decoder layer's cross-attention keeps the keys and values of the encoder's output, whatever the context.")
    if any(r.mtp for r in rows):
        caption += _(
            " MTP: the checkpoint's multi-token-prediction layers, which a server decoding speculatively runs for each"
            " token, each keeping a layer's cache of the kind its row names; --no-mtp leaves them out."
        )
    return FitTable(Text(title), columns, cells, caption=Text(tidy(caption.lstrip()), style="dim"))  # no space after 。


def decode_state_data(rows: tuple[KindState, ...], context: int, batches: list[int], act_bytes: int) -> dict[str, Any]:
    per_sequence = sum(r.bytes_(act_bytes) for r in rows)
    return {
        "context": context,
        "bytes_per_element": act_bytes,
        "kinds": [
            {
                "kind": str.__str__(r.kind),
                "layers": r.layers,
                "tokens": r.tokens,
                "elements_per_token": r.width or None,
                # a mixer's state, or the values an attention row carries to the next token (Zaya's)
                "recurrent_state_elements": r.recurrent if (r.tokens is None and r.source is None) or r.recurrent else None,
                # a mixer's conv window, or the one an attention row keeps beside its cache (Inkling's key and value convs)
                "conv_state_elements": r.conv if (r.tokens is None and r.source is None) or r.conv else None,
                "recurrent_bytes_per_element": (r.recurrent_bytes or act_bytes)
                if (r.tokens is None and r.source is None) or r.recurrent
                else None,
                "conv_bytes_per_element": (r.conv_bytes or act_bytes) if (r.tokens is None and r.source is None) or r.conv else None,
                "elements_per_layer": r.elements_per_layer,
                "bytes_per_layer": r.bytes_per_layer(act_bytes),
                "bytes": r.bytes_(act_bytes),
                **({} if r.sized else {"sized": False}),
                # image_tokens, encoder_tokens (null where the config does not say how long a source is)
                **({f"{r.source}_tokens": r.source_tokens or None} if r.source is not None else {}),
                **({"multi_token_prediction": True} if r.mtp else {}),
                **({"compress_rate": r.rate, "entries": r.entries, "index_key_elements": r.index_width or None} if r.rate else {}),
            }
            for r in rows
        ],
        "bytes_per_sequence": per_sequence,
        "bytes_by_batch": {str(b): b * per_sequence for b in batches},
    }
