"""Gemma 3n's text model: Gemma 3's attention and FFN with MatFormer widths, KV-shared layers,
activation sparsity and the tensors it adds (AltUp, Laurel, per-layer inputs).
"""

from __future__ import annotations

from ffn_cli.accounting import ParamTensor
from ffn_cli.configs.families.common import FamilyReader, attention_spec, decoder_spec
from ffn_cli.configs.families.family import AttentionReach, Family
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.spec import MAX_LAYERS, ExtraPart, ModelSpec
from ffn_cli.spec import MAX_DIM, FFNSpec, check_int

__all__ = ["GEMMA3N_TEXT", "GEMMA3N_WIDTH"]

# Gemma3nTextConfig's intermediate_size, which it repeats for every layer.
GEMMA3N_WIDTH = 16384


def _gemma3n_widths(r: FamilyReader, layers: int) -> tuple[int, ...]:
    """intermediate_size: one width, or one a layer (the class repeats a single one)."""
    value = r.get("intermediate_size", GEMMA3N_WIDTH)
    widths = value if isinstance(value, list) else [value] * layers
    if len(widths) != layers:
        why = _("must list one width for each of {layers} layers, or be one width").format(layers=layers)
        raise FFNError(r.key("intermediate_size"), value, why)
    return tuple(check_int(r.key("intermediate_size"), w, maximum=MAX_DIM) for w in widths)


def _gemma3n_kv_shared(r: FamilyReader, layers: int) -> tuple[int, ...]:
    """The last num_kv_shared_layers reuse the keys and values of the last earlier layer of
    their kind (layer_types: every fifth layer full, the rest sliding, by default); each kind
    among them needs such a layer, as the config class checks."""
    types = r.get("layer_types", ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(layers)])
    if not isinstance(types, list) or len(types) != layers or any(not isinstance(t, str) for t in types):
        why = _("must name sliding_attention or full_attention for each of {layers} layers").format(layers=layers)
        raise FFNError(r.key("layer_types"), types, why)
    shared = r.integer("num_kv_shared_layers", minimum=0)
    first = layers - shared
    if shared and (first < 1 or set(types[first:]) - set(types[:first])):
        why = _("leaves a shared layer with no earlier layer of its kind to take keys and values from")
        raise FFNError(r.key("num_kv_shared_layers"), shared, why)
    return tuple(range(first, layers)) if shared else ()


def _gemma3n_sparsity(r: FamilyReader, layers: int) -> tuple[tuple[int, ...], str]:
    """The layers whose gate activation_sparsity_pattern thins (by default the first 10 of more
    than 10), and what it does, in words: the gate becomes relu(gate − mean − Φ⁻¹(s)·std) over
    each token's units before the activation, Φ⁻¹ the standard normal's quantile."""
    default = [0.95] * 10 + [0.0] * (layers - 10) if layers > 10 else [0.0] * layers
    pattern = r.get("activation_sparsity_pattern", default)
    if not isinstance(pattern, list) or len(pattern) != layers:
        why = _("must give a sparsity for each of {layers} layers").format(layers=layers)
        raise FFNError(r.key("activation_sparsity_pattern"), pattern, why)
    if any(isinstance(s, bool) or not isinstance(s, (int, float)) or s != s for s in pattern):
        raise FFNError(r.key("activation_sparsity_pattern"), pattern, _("must hold a number for each layer"))
    sparse = tuple(i for i, s in enumerate(pattern) if s > 0)  # 0 or below: the gate as it is
    levels = sorted({float(pattern[i]) for i in sparse})
    if not levels:
        return (), ""
    if len(levels) > 1 or levels[0] >= 1:
        text = N_("activation sparsity {s} (the gate cut below a Gaussian quantile of its units before the activation)")
        return sparse, Message(text, s=", ".join(f"{s:g}" for s in levels))
    from statistics import NormalDist  # Gemma 3n alone needs the normal's quantile

    text = N_("activation sparsity {s} (the gate becomes relu(gate − mean − {z}·std) over its units before the activation)")
    return sparse, Message(text, s=f"{levels[0]:g}", z=f"{NormalDist().inv_cdf(levels[0]):.4f}")


def _gemma3n_extras(r: FamilyReader, d: int, layers: int) -> tuple[ExtraPart, ...]:
    """What Gemma 3n adds to every layer and beside them, as modeling_gemma3n.py builds it.

    Each layer: AltUp over n = altup_num_inputs copies of the hidden state (correct_output_scale
    (d), correction_coefs (n, n), prediction_coefs (n², n), modality_router (n, d), run twice: to
    predict and to correct; the predictions mix the n copies, a (d, n)·(n, n) matmul per token),
    Laurel (linear_left (rank, d), linear_right (d, rank)) and the per-layer input gate (p, d) and
    projection (d, p), p = hidden_size_per_layer_input. Beside the layers: a second embedding
    table (vocab_size_per_layer_input, layers · p), the projection of the hidden state to it
    (layers · p, d) and its norm over p, and n − 1 projections (d, d) into the copies and n − 1
    out of them. Their norms (router_norm, post_laurel_norm, post_per_layer_input_norm) are
    among the layer norms."""
    n, rank = r.integer("altup_num_inputs"), r.integer("laurel_rank")
    p, vocab = r.integer("hidden_size_per_layer_input"), r.integer("vocab_size_per_layer_input")
    altup = (
        ParamTensor("altup.correct_output_scale", (d,)),
        ParamTensor("altup.correction_coefs.weight", (n, n)),
        ParamTensor("altup.prediction_coefs.weight", (n * n, n)),
        ParamTensor("altup.modality_router.weight", (n, d)),
    )
    laurel = (ParamTensor("laurel.linear_left.weight", (rank, d)), ParamTensor("laurel.linear_right.weight", (d, rank)))
    gate = (ParamTensor("per_layer_input_gate.weight", (p, d)), ParamTensor("per_layer_projection.weight", (d, p)))
    table = (ParamTensor("embed_tokens_per_layer.weight", (vocab, layers * p)),)
    extras = [
        ExtraPart(N_("per-layer embeddings"), "embedding", f"({vocab}, {layers} × {p})", table),
        ExtraPart(
            N_("per-layer input projection"),
            "other",
            f"({layers} × {p}, {d})",
            (ParamTensor("per_layer_model_projection.weight", (layers * p, d)),),
            flops=2 * layers * p * d,
        ),
        ExtraPart(N_("per-layer input norm"), "norm", f"RMSNorm({p:,})", (ParamTensor("per_layer_projection_norm.weight", (p,)),)),
    ]
    if n > 1:  # n − 1 projections into the copies before the layers, n − 1 out of them after
        ways = (ParamTensor("altup_projections.*.weight", (d, d)), ParamTensor("altup_unembed_projections.*.weight", (d, d)))
        both = Message(N_("({d}, {d}) into the copies and out of them"), d=d)
        extras.append(ExtraPart(N_("AltUp projections"), "other", both, ways, flops=4 * d * d, copies=n - 1))
    altup_detail = Message(N_("{n} copies of the hidden state: router ({n}, {d}) run twice, coefficients"), n=n, d=d)
    laurel_detail = Message(N_("low rank {rank}: ({rank}, {d}), ({d}, {rank})"), rank=rank, d=d)
    altup_flops = 2 * 2 * n * d + 2 * n * n * n + 2 * n * n + 2 * d * n * n
    extras += [
        ExtraPart(N_("AltUp"), "other", altup_detail, altup, per_layer=True, flops=altup_flops),
        ExtraPart(N_("Laurel"), "other", laurel_detail, laurel, per_layer=True, flops=4 * rank * d),
        ExtraPart(N_("per-layer input gate"), "other", f"({p}, {d}), ({d}, {p})", gate, per_layer=True, flops=4 * p * d),
    ]
    return tuple(extras)


def _gemma3n_text(r: FamilyReader, name: str) -> ModelSpec:
    # Gemma 3n's text model (Gemma3nTextModel under Gemma3nForCausalLM): Gemma 3's attention (q/k
    # RMSNorm per head, v normed without a weight) and gated FFN (its width intermediate_size,
    # which may differ by layer: MatFormer slices), 7 norms a layer (4, AltUp's
    # router_norm, Laurel's, the per-layer input's), the extras _gemma3n_extras lists; the last
    # num_kv_shared_layers build no k_proj, v_proj or k_norm. The first layers' activation
    # sparsity and the soft-capping move no parameter. Tied head by default.
    d = r.integer("hidden_size")
    layers = check_int(r.key("num_hidden_layers"), r.integer("num_hidden_layers"), maximum=MAX_LAYERS)  # before the per-layer lists
    heads = r.integer("num_attention_heads")
    if d % heads:
        raise FFNError(r.key("num_attention_heads"), heads, _("must divide hidden_size ({d})").format(d=d))
    bias = r.flag("attention_bias", False)
    attention = attention_spec(r, d, qkv_bias=bias, qk_norm="head")
    widths = _gemma3n_widths(r, layers)
    dense = FFNSpec(variant=r.variant("hidden_activation", gated=True), d_model=d, d_ff=widths[0])
    sparse, note = _gemma3n_sparsity(r, layers)
    return decoder_spec(
        r,
        name,
        attention=attention,
        dense=dense,
        norms_per_layer=7,
        kv_shared_layers=_gemma3n_kv_shared(r, layers),
        extras=_gemma3n_extras(r, d, layers),
        ffn_note=note,
        ffn_note_layers=sparse,
        dense_widths=widths if len(set(widths)) > 1 else (),
    )


GEMMA3N_TEXT = Family(
    ("gemma3n_text",),
    _gemma3n_text,
    nested_in=("gemma3n",),
    # Gemma 3n's norms scale by w, as built; its v norm has no weight and its scores no scale.
    value_notes=("v normed by an RMSNorm without a weight, scores unscaled (scale 1), built as head_dim^-½ (values only)",),
    unscaled_scores=True,
    reach=AttentionReach(window=512, sliding="pattern", full_every=5),
)
