"""FFN against attention FLOPs per token at several sequence lengths, as a table or JSON."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Group
from rich.text import Text

from ffn_cli.i18n import N_, _, shown, tidy
from ffn_cli.models.mixers import SourceAttention
from ffn_cli.models.pattern import layer_pattern
from ffn_cli.models.seq_flops import FlopsAtLength, LayerStack
from ffn_cli.render.fit import Col
from ffn_cli.render.format import fmt_count, fmt_flops
from ffn_cli.render.params.common import table

__all__ = ["pattern_text", "seq_flops_data", "seq_flops_view", "windows_text"]


def windows_text(stack: LayerStack) -> str:
    """'sliding window 4,096 in 21 of 42 layers', or '' without windows."""
    n = len(stack.windows)
    windows = Counter(w for w in stack.windows if w is not None)
    chunks = Counter(c for c in stack.chunks if c is not None)
    sliding, chunked = _("sliding window {window} in {count} of {n} layers"), _("chunks of {window} in {count} of {n} layers")
    parts = [sliding.format(window=f"{w:,}", count=c, n=n) for w, c in sorted(windows.items())]
    parts += [chunked.format(window=f"{w:,}", count=c, n=n) for w, c in sorted(chunks.items())]
    return _(", ").join(parts)


def pattern_text(stack: LayerStack, *, translate: bool = False) -> str:
    """The layers' attention kinds in a few words ('5 × sliding 1,024 + 1 × full, × 10'), or ''
    when every layer is the same; in the current language with `translate` (--json keeps English)."""

    def say(message: str) -> str:
        return _(message) if translate else message

    chunks = stack.chunks or (None,) * len(stack.windows)
    mixers = stack.mixers or (None,) * len(stack.windows)
    said = {m: shown(m) if translate else str.__str__(m) for m in mixers if m is not None}  # a mixer's kind, in words
    labels = [
        said[m]
        if m is not None
        else say(N_("sliding {window}")).format(window=f"{w:,}")
        if w is not None
        else say(N_("chunked {chunk}")).format(chunk=f"{c:,}")
        if c is not None
        else say(N_("full"))
        for w, c, m in zip(stack.windows, chunks, mixers, strict=True)
    ]
    if stack.mixers:  # a hybrid: its attention layers are attention, whatever their keys
        full = say(N_("full"))
        attention = [say(N_("attention")) if label == full else say(N_("attention {keys}")).format(keys=label) for label in labels]
        labels = [label if label in said.values() else a for label, a in zip(labels, attention, strict=True)]
    if stack.ffn_only:  # one block a layer: the FFN's layers have no token mixer
        labels = ["FFN" if alone else label for label, alone in zip(labels, stack.ffn_only, strict=True)]
    pattern = layer_pattern(labels) if len(set(labels)) > 1 else ""
    return pattern.replace(", then ", say(N_(", then "))).replace(", × ", say(N_(", × ")))


def _keys_text(stack: LayerStack) -> str:
    if not stack.causal:
        return _("bidirectional: every query reads all L keys")
    return _("causal: query i reads its i + 1 latest keys, (L + 1)/2 on average")


def seq_flops_view(stack: LayerStack, rows: tuple[FlopsAtLength, ...], scope: str) -> Group:
    """scope: the layers the counts cover, 'one layer' or '32 layers' (embeddings and LM head left out)."""
    columns = [Col("seq_len"), Col("FFN"), Col(_("attn proj"), drop=1), Col(_("attn scores"))]
    cells = [[fmt_count(r.seq_len), fmt_flops(r.ffn), fmt_flops(r.projections), fmt_flops(float(r.scores))] for r in rows]
    unsized = _unsized_source(stack)
    if stack.mixer is not None:  # a hybrid's mixer layers: their convolution and state update
        columns.append(Col(_("mixer")))
        for row, r in zip(cells, rows, strict=True):
            row.append(_("not sized") if unsized else fmt_flops(float(r.mixer)))
    columns.append(Col(_("FFN share")))
    for row, r in zip(cells, rows, strict=True):
        row.append(f"{100 * r.ffn_share:.1f}%")
    crossover = stack.crossover()
    scores = _("scores: Q·Kᵀ and softmax·V; {kind}, {detail}").format(kind=stack.attention_kind, detail=shown(stack.attention_detail))
    every_compressed = bool(stack.compressed) and all(c is not None for c in stack.compressed)
    if every_compressed:  # each kind's words begin with its name (HCA, CSA): said once
        scores = _("scores: Q·Kᵀ and softmax·V; {detail}").format(detail=shown(stack.attention_detail))
    lines = [scores] if every_compressed else [scores, _keys_text(stack)]
    if len(stack.windows) > 1:
        lines.append(_("all layers summed; embeddings and the LM head left out"))
    if stack.left_out:
        lines.append(_("{parts} left out too").format(parts=_(", ").join(_(name) for name in stack.left_out)))
    windows = windows_text(stack)
    if windows:
        lines.append(_("{windows}: those layers read at most that many keys").format(windows=windows))
    compressed = [c for c in stack.compressed if c is not None]
    if compressed:
        said = _("compressed attention in {count} of {n} layers: a query reads the window's latest keys and an entry for each m "
                 "tokens it has seen (CSA: the indexer's top-k of them, after scoring them all)")  # fmt: skip
        lines.append(said.format(count=len(compressed), n=len(stack.compressed)))
    pattern = pattern_text(stack, translate=True)
    if pattern:
        lines.append(_("layers: {pattern}").format(pattern=pattern))
    if stack.mixers:
        kind = next(m for m in stack.mixers if m is not None)
        count = sum(m is not None for m in stack.mixers)
        mixer = _("{kind} in {count} of {n} layers: {flops} of the attn proj, no scores over the keys")
        cross = stack.mixer is not None and isinstance(stack.mixer.scan, SourceAttention)
        if cross and not stack.attending_mixer_layers:  # its scores are over the image's keys alone
            mixer = _("{kind} in {count} of {n} layers: {flops} of the attn proj, no scores over the text's keys")
        elif stack.attending_mixer_layers == count and stack.mixer is not None:  # Falcon-H1: the layers attend too
            kind = stack.mixer.kind
            mixer = _("{kind} beside attention in {count} of {n} layers: {flops} of the attn proj")
        elif stack.attending_mixer_layers and stack.mixer is not None:  # Zamba: attention beside it in some of them
            kind = stack.mixer.kind
            mixer = _("{kind} in {count} of {n} layers, attention beside it in {beside}: {flops} of the attn proj")
        said = mixer.format(kind=shown(kind), count=count, n=len(stack.mixers), beside=stack.attending_mixer_layers,
                            flops=fmt_flops(stack.mixer_projection_flops))  # fmt: skip
        lines.append(tidy(said))  # a kind said in Chinese takes no spaces around it
    if stack.mixer is not None:
        scan = stack.mixer.scan
        if isinstance(scan, SourceAttention):  # no conv, no recurrence: an image's keys, the same for every token
            what = _("mixer: {scan}").format(scan=scan.detail().shown())
        elif scan is not None and scan.padded:
            what = _("mixer: the causal conv and the state update, {scan}, the last chunk padded").format(scan=scan.detail().shown())
        elif scan is not None:  # Mamba-1's scan runs token by token, the mLSTM's rest past whole chunks: nothing is padded
            what = _("mixer: the causal conv and the state update, {scan}").format(scan=scan.detail().shown())
        else:
            what = _("mixer: the causal conv")
        lines.append(what + _(", a cost per token that does not grow with the length"))
    if any(stack.ffn_only):
        lines.append(_("FFN alone, no token mixer, in {count} of {n} layers").format(count=sum(stack.ffn_only), n=len(stack.ffn_only)))
    lines.append(
        _("attention FLOPs overtake the FFN's at seq_len {n}").format(n=f"{crossover:,}")
        if crossover is not None
        else _("attention FLOPs never overtake the FFN's at any length")
    )
    if unsized:  # the crossover's attention holds no scores over a source of unsaid length
        lines[-1] += _(", the scores over the encoder's output left out")
    title = _("forward matmul FLOPs per token, {scope}").format(scope=scope)
    return Group(table(title, columns, cells), Text("\n".join(lines), style="dim"))


def _compressed_data(stack: LayerStack) -> list[dict[str, Any]]:
    """DeepSeek-V4's layer kinds, each with its layers (the `windows` list holds them as None: their
    keys are counted by their own spec)."""
    kinds: dict[Any, list[int]] = {}
    for i, c in enumerate(stack.compressed):
        if c is not None:
            kinds.setdefault(c, []).append(i)
    return [{"layers": layers, **c.shape_data()} for c, layers in kinds.items()]


def seq_flops_data(stack: LayerStack, rows: tuple[FlopsAtLength, ...]) -> dict[str, Any]:
    return {
        "causal": stack.causal,
        "attention_kind": stack.attention_kind,
        "attention_detail": stack.attention_detail,
        "score_flops_per_key": list(stack.score_flops_per_key),
        "windows": list(stack.windows),
        **({"compressed": _compressed_data(stack)} if stack.compressed else {}),
        "chunks": list(stack.chunks) or [None] * len(stack.windows),
        "layer_pattern": pattern_text(stack) or None,
        "mixers": list(stack.mixers) or None,
        "mixer_projection_flops": stack.mixer_projection_flops,
        "mixer_chunk": stack.mixer.scan.chunk if stack.mixer is not None and stack.mixer.scan is not None else None,
        "ffn_only": list(stack.ffn_only) or None,
        "crossover_seq_len": stack.crossover(),
        # DeepSeek Sparse Attention's indexer and top-k, where the model has them
        **({"index_flops_per_key": list(stack.index_flops_per_key), "sparse_topk": stack.sparse_topk} if stack.sparse_topk else {}),
        # the scores over an encoder's output of unsaid length: null, not sized (never 0)
        "rows": [r.data() | ({"mixer_state_flops": None} if _unsized_source(stack) else {}) for r in rows],
    }


def _unsized_source(stack: LayerStack) -> bool:
    """The mixer attends to an encoder's output whose length the config does not say (--source-len sizes it)."""
    return stack.mixer is not None and stack.mixer.unsized_source
