"""A whole model in `ffn params`: its parts (embeddings, attention, FFN or MoE layers, norms,
head), the totals and shares, weights and training memory. A part that carries an active count
(a MoE layer's) makes the model's active figures show beside its totals."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.accounting import DTYPE_BYTES, ParamTensor
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.i18n import _, shown, tidy
from ffn_cli.models.count import training_memory
from ffn_cli.models.layer import BACKWARD_FACTOR
from ffn_cli.models.vision import towers_named
from ffn_cli.render.fit import LABEL_FLOOR, Col, FitTable
from ffn_cli.render.format import fmt_bytes, fmt_count, fmt_flops
from ffn_cli.render.literal import literal, visible
from ffn_cli.render.params.common import attention_data, pct, ratio, share, table, word

if TYPE_CHECKING:
    from ffn_cli.models.count import ModelParams, TrainingMemory
    from ffn_cli.spec import FFNSpec

__all__ = ["active_range_rows", "applied_fields", "memory_rows", "model_data", "model_view", "training_data"]

# Weight memory is shown for these; JSON carries every dtype the accounting knows.
_SHOWN_DTYPES = ("float32", "bfloat16", "float8")


def training_data(t: TrainingMemory) -> dict[str, Any]:
    return {
        "dtype": t.dtype,
        "weights_bytes": t.weights_bytes,
        "grads_bytes": t.grads_bytes,
        "master_bytes": t.master_bytes,
        "optimizer_bytes": t.optimizer_bytes,
        "total_bytes": t.total_bytes,
    }


def applied_fields(ffn: FFNSpec) -> dict[str, Any]:
    """The spec's fields that its variant uses (a dense FFN has no experts or top_k): what a
    program reading --json may take as facts of the model. Those left out are FFNSpec's defaults
    and mean nothing for it."""
    used = ffn.info.options_used(ffn)
    return {k: v for k, v in ffn.as_dict().items() if k in used}


def model_data(m: ModelParams, dtype: str = "bfloat16") -> dict[str, Any]:
    s = m.spec
    flops = m.matmul_flops_per_token
    return {
        "model": s.name,
        "model_type": s.model_type,
        "config": {
            "d_model": s.d_model,
            "n_layers": s.n_layers,
            "vocab_size": s.vocab_size,
            "tie_word_embeddings": s.tie_word_embeddings,
            "moe_layers": list(s.moe_layers),
            "norm": s.norm,
            # Layers that are one block each (Nemotron-H), only where there are any.
            **(
                {"no_ffn_layers": list(s.no_ffn_layers), "no_mixer_layers": list(s.no_mixer_layers)}
                if s.no_ffn_layers or s.no_mixer_layers
                else {}
            ),
            # Gemma 3n's KV-shared layers and per-layer FFN widths, only where there are any.
            **({"kv_shared_layers": list(s.kv_shared_layers)} if s.kv_shared_layers else {}),
            # Zamba's layers that run an earlier layer's shared blocks: [layer, the layer holding their weights].
            **({"weights_from": [list(pair) for pair in s.weights_from]} if s.weights_from else {}),
            **({"dense_widths": list(s.dense_widths)} if s.dense_widths else {}),
        },
        # None where no layer attends (Mamba, xLSTM, RWKV): the spec's stand-in is no attention
        "attention": _with_extra(attention_data(s.attention), s.attention_extra) if s.attention_layers else None,
        # The other attention shapes and their layers (Gemma 4's full layers, DeepSeek-V4's CSA ones).
        **(
            {
                "attention_kinds": [
                    {"layers": list(k.layers), **_with_extra(attention_data(k.attention), k.extra)} for k in s.attention_kinds
                ]
            }
            if s.attention_kinds
            else {}
        ),
        "dense_ffn": applied_fields(s.dense_ffn) if s.dense_ffn else None,
        "moe_ffn": applied_fields(s.moe_ffn) if s.moe_ffn else None,
        "parts": [
            {
                "name": p.name,
                "kind": p.kind,
                "detail": p.detail,
                "params_each": p.params_each,
                "copies": p.copies,
                "params": p.params,
                "active_params": p.active_params,
                "runs_on": p.runs_on or None,
                "share": share(p.params, m.total_params),
            }
            for p in m.parts
        ],
        "per_layer": m.per_layer,
        "sublayers": m.spec.sublayers,
        "total_params": m.total_params,
        "active_params": m.active_params,
        "least_active_params": m.least_active_params,
        "mean_active_params": m.mean_active_params,
        "active_params_without_embeddings": m.active_without_embeddings,
        "active_params_without_embeddings_or_head": m.active_without_embeddings_or_head,
        "embedding_params": m.embedding_params,
        "non_embedding_params": m.non_embedding_params,
        "attention_params": m.attention_params,
        "ffn_params": m.ffn_params,
        "ffn_active_params": m.ffn_active_params,
        "norm_params": m.norm_params,
        "vision_params": m.vision_params,
        "tower_params": m.tower_params,
        "text_params": m.text_params,
        "ffn_share": m.ffn_share,
        "ffn_active_share": m.ffn_active_share,
        "ffn_attention_ratio": m.ffn_attention_ratio,
        "ffn_active_attention_ratio": m.ffn_active_attention_ratio,
        "weight_bytes": {d: m.weight_bytes(d) for d in DTYPE_BYTES},
        "training_memory": training_data(m.training_memory(dtype)),
        "matmul_flops_per_token": flops,
        "mean_matmul_flops_per_token": m.mean_matmul_flops_per_token,
        "zero_experts": m.spec.zero_experts,
        "training_flops_per_token": BACKWARD_FACTOR * flops,
    }


def _with_extra(data: dict[str, Any], extra: tuple[ParamTensor, ...]) -> dict[str, Any]:
    """An attention's JSON with the tensors beside its projections (an output gate's half of
    q_proj, an indexer; Inkling 2's per-token sinks, sink_proj, which `sinks` does not mean):
    `params` is the projections', `layer_params` the layer's whole, as the parts table counts it,
    `extra_tensors` each tensor beside them by name and shape."""
    if not extra:
        return data
    beside = sum(t.count for t in extra)
    tensors = [{"name": t.name, "shape": list(t.shape)} for t in extra]
    return {**data, "extra_params": beside, "extra_tensors": tensors, "layer_params": data["params"] + beside}


def _has_active(m: ModelParams) -> bool:
    """Whether some part carries an active count of its own (a MoE layer's: what one token touches)."""
    return any(p.active_each is not None for p in m.parts)


def _parts_table(m: ModelParams) -> FitTable:
    s = m.spec
    # Text, not markup: the name comes from the config file or its folder.
    layers = _("{n} layers").format(n=s.n_layers)
    if s.sublayers > 1:  # LongCat-Flash's config layers are its sublayers
        layers = _("{n} layers of {sub} sublayers").format(n=s.n_layers // s.sublayers, sub=s.sublayers)
    vocab = _("vocab {n}").format(n=f"{s.vocab_size:,}")
    title = Text(visible(f"{s.name} · {s.model_type} · {layers} · d_model {s.d_model:,} · {vocab}"))
    columns = [Col(_("part"), "text"), Col(_("each"), drop=2), Col("×", drop=3), Col(_("params")), Col("%", drop=1)]
    rows: list[Any] = []
    # Zero-computation experts make the active count a range: the figures here are its most.
    active = _("active {n}") if not m.spec.zero_experts else _("active at most {n}")
    for p in m.parts:
        params = fmt_count(p.params) + (f"\n[dim]{active.format(n=fmt_count(p.active_params))}[/]" if p.active_params != p.params else "")
        rows.append(
            [
                f"{literal(word(p.name))}\n[dim]{literal(word(p.detail))}[/]",
                fmt_count(p.params_each),
                str(p.copies),
                params,
                pct(p.params, m.total_params),
            ]
        )
    rows.append(None)
    total = f"[bold]{fmt_count(m.total_params)}[/]"
    if _has_active(m):
        total += f"\n[dim]{active.format(n=fmt_count(m.active_params))}[/]"
    rows.append([f"[bold]{_('total')}[/]\n[dim]{_('parameters only, buffers excluded')}[/]", "", "", total, "100%"])
    return table(title, columns, rows)


def memory_rows(params: int, dtype: str, stored: int | None = None, asked: str = "") -> list[list[str]]:
    """The weights and training-memory rows of a model summary, from its parameter total; with
    `stored`, the bytes as stored where they differ (their own table follows): the checkpoint's,
    or the format --weights `asked` for."""

    weights = [f"{d} {fmt_bytes(params * DTYPE_BYTES[d])}" for d in _SHOWN_DTYPES]
    if stored is not None and stored != params * DTYPE_BYTES[dtype]:
        said = _("in --weights {format} {bytes} (below)") if asked else _("as the checkpoint stores them {bytes} (below)")
        weights.append(said.format(format=asked, bytes=fmt_bytes(stored)))
    t = training_memory(params, dtype)
    parts = [_("weights {bytes}").format(bytes=fmt_bytes(t.weights_bytes)), _("grads {bytes}").format(bytes=fmt_bytes(t.grads_bytes))]
    parts += [_("fp32 master {bytes}").format(bytes=fmt_bytes(t.master_bytes))] if t.master_bytes else []
    parts += [_("Adam m, v {bytes}").format(bytes=fmt_bytes(t.optimizer_bytes))]
    how = _("{dtype} with Adam: {parts}; activations extra").format(dtype=dtype, parts=" + ".join(parts))
    return [
        [_("weights"), fmt_bytes(params * DTYPE_BYTES[dtype]), " · ".join(weights)],
        [_("training memory"), fmt_bytes(t.total_bytes), how],
    ]


def active_range_rows(least: int, mean: int, most: int, total: int, embeddings: int, zero: int) -> list[list[str]]:
    """What one token touches where `zero` zero-computation experts can take some of its picks:
    the least, the mean and the most, each with and without the token embeddings."""
    without = _("{share} of the total; {n} without the token embeddings")
    least_how = _("its picks land on zero-computation experts where they can ({zero} in the pool); ") + without
    mean_how = _("each expert of the pool, real or zero, picked equally often: k · E / (E + Z) real experts a layer; ") + without
    most_how = _("every pick a real expert; ") + without
    return [
        [
            _("active per token, least"),
            fmt_count(least),
            least_how.format(zero=f"{zero:,}", share=pct(least, total), n=fmt_count(least - embeddings)),
        ],
        [_("active per token, mean"), fmt_count(mean), mean_how.format(share=pct(mean, total), n=fmt_count(mean - embeddings))],
        [_("active per token, most"), fmt_count(most), most_how.format(share=pct(most, total), n=fmt_count(most - embeddings))],
    ]


def _model_summary(m: ModelParams, dtype: str, stored: int | None = None, asked: str = "") -> FitTable:
    has_active = _has_active(m)
    rows: list[Any] = []
    of_total = _("{pct} of the total")
    if has_active and m.least_active_params != m.active_params:
        zero = m.spec.zero_experts
        rows += active_range_rows(m.least_active_params, m.mean_active_params, m.active_params, m.total_params, m.embedding_params, zero)
    elif has_active:
        included = _("{pct} of the total, embeddings and head included").format(pct=pct(m.active_params, m.total_params))
        rows.append([_("active per token"), fmt_count(m.active_params), included])
        # Vendors state active counts in three conventions: name each, as the figures differ by billions.
        without = _("without the token embeddings (gpt-oss's and Nemotron's convention); {n} without the head too (Qwen's, GLM's)")
        if m.spec.lm_head and m.spec.tie_word_embeddings:  # a head tied to the table: one count for both
            without = _("without the token embeddings, and so without the head tied to them (gpt-oss's, Nemotron's, Qwen's and GLM's "
                        "conventions alike)")  # fmt: skip
        rows.append(
            [
                _("active, no embeddings"),
                fmt_count(m.active_without_embeddings),
                without.format(n=fmt_count(m.active_without_embeddings_or_head)),
            ]
        )
    if m.vision_params:
        runs_on = m.spec.vision.runs_on if m.spec.vision is not None else frozenset({"images"})
        # an encoder-decoder's encoder (held tensor by tensor, Whisper's on audio): what is left is its decoder
        encoder = m.spec.vision is not None and m.spec.vision.is_encoder
        alone = (
            _("included in the total ({pct}); the decoder alone has {n}")
            if encoder
            else _("included in the total ({pct}); the text model alone has {n}")
        )
        vision = alone.format(pct=pct(m.vision_params, m.total_params), n=fmt_count(m.text_params))
        if has_active:  # a text token never runs the tower
            runs = {
                frozenset({"images"}): _("; not in the active counts: it runs on images, not on a text token"),
                frozenset({"audio"}): _("; not in the active counts: it runs on audio, not on a text token"),
                frozenset({"images", "audio"}): _("; not in the active counts: they run on images and audio, not on a text token"),
                frozenset({"source"}): _("; not in the active counts: it runs once a source, not by a token decoded"),
                frozenset({"speech"}): _("; not in the active counts: it runs on the speech the model speaks, not on a text token"),
                frozenset({"audio", "speech"}): _(
                    "; not in the active counts: they run on the model's audio and the speech it speaks, not on a text token"
                ),
                frozenset({"images", "speech"}): _(
                    "; not in the active counts: they run on the model's images and the speech it speaks, not on a text token"
                ),
                frozenset({"images", "audio", "speech"}): _(
                    "; not in the active counts: they run on the model's images, audio and the speech it speaks, not on a text token"
                ),
            }
            vision += runs.get(runs_on, _("; not in the active counts: they run on the model's other inputs, not on a text token"))
        elif encoder:
            vision += _("; it runs once a source: not in a token's FLOPs")
        experts = any(e.kind == "vision" for e in m.spec.extras)  # ERNIE 4.5 VL's image experts beside its text ones
        label = _("vision tower and experts") if experts and runs_on == {"images"} else _(towers_named(runs_on))
        label = _("encoder") if encoder else label
        rows.append([label, fmt_count(m.vision_params), vision])
    without = _("without token/position embeddings and an untied head")
    if any(e.kind == "embedding" for e in m.spec.extras):  # Gemma 3n's and 4's per-layer tables are embeddings too
        without = _("without token/position embeddings, the tables looked up beside them, and an untied head")
    rows.append([_("non-embedding"), fmt_count(m.non_embedding_params), without])
    # A hybrid's or a recurrent model's mixers count with its attention: their parameters, named so.
    mixer = m.spec.mixer
    mixing, per = (_("attention"), _("FFN / attention")) if mixer is None else (_("token mixing"), _("FFN / token mixing"))
    mixing_how = of_total.format(pct=pct(m.attention_params, m.total_params))
    if mixer is not None and m.spec.attention_layers:
        mixing_how += tidy(_("; attention and {mixer} together").format(mixer=shown(mixer.kind)))  # a mixer said in Chinese
    rows.append([mixing, fmt_count(m.attention_params), mixing_how])
    ffn_how = of_total.format(pct=pct(m.ffn_params, m.total_params))
    most = bool(m.spec.zero_experts)  # a range of active counts: these are its most
    if has_active:
        said = _("; active at most {n} ({pct} of the most active)") if most else _("; active {n} ({pct} of active)")
        ffn_how += said.format(n=fmt_count(m.ffn_active_params), pct=pct(m.ffn_active_params, m.active_params))
    rows.append(["FFN", fmt_count(m.ffn_params), ffn_how])
    all_layers = _("parameters, all layers")
    if has_active:  # said beside, not in the number's cell, which would crowd the row's label out of a narrow terminal
        said = _("; active at most {ratio}") if most else _("; active {ratio}")
        all_layers += said.format(ratio=ratio(m.ffn_active_attention_ratio))
    rows.append([per, ratio(m.ffn_attention_ratio), all_layers])
    rows.append(None)
    rows += memory_rows(m.total_params, dtype, stored, asked)
    flops = m.matmul_flops_per_token
    scores = _("matmuls on the active path; attention scores add 4·seq·heads·head_dim per layer")
    if not m.spec.attention_layers:  # no layer attends (Mamba, xLSTM, RWKV): no scores over the keys
        scores = _("matmuls on the active path; no layer attends, so nothing grows with the context")
    elif any(isinstance(m.spec.attention_of(i), CompressedAttentionSpec) for i in m.spec.attention_layers):
        scores = _(
            "matmuls on the active path; attention scores add 4·heads·head_dim for each key a query reads (its window's, "
            "and the pooled entries)"
        )
    if m.spec.zero_experts:  # the most, every pick a real expert; the mean beside it
        mean = _("every pick a real expert; {mean} on average (k · E / (E + Z) real experts a layer); ").format(
            mean=fmt_flops(m.mean_matmul_flops_per_token)
        )
        scores = mean + scores
    rows.append([_("forward FLOPs/token"), fmt_flops(flops), scores])
    rows.append([_("forward + backward"), fmt_flops(BACKWARD_FACTOR * flops), _("{factor} × forward").format(factor=BACKWARD_FACTOR)])
    return table(_("summary"), [Col("what", "text", floor=LABEL_FLOOR), Col("value"), Col("how", "text")], rows, show_header=False)


def model_view(m: ModelParams, dtype: str = "bfloat16", stored: int | None = None, asked: str = "") -> RenderableType:
    """The parts and the summary; `stored`: the bytes as stored where a stored-weights table follows
    (the checkpoint's, or in the format --weights `asked` for)."""
    return Group(_parts_table(m), _model_summary(m, dtype, stored, asked))
