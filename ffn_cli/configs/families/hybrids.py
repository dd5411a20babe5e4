"""Hybrids that mix tokens with something besides attention in some layers: Qwen3-Next (Gated
DeltaNet), LFM2 and LFM2-MoE (short convolutions), Granite-4.0-H (Mamba-2).
"""

from __future__ import annotations

from dataclasses import replace

from ffn_cli.accounting import ParamTensor
from ffn_cli.configs.families.common import FamilyReader, attention_spec, decoder_spec, dense_spec, every_layer, moe_spec
from ffn_cli.configs.families.family import Family
from ffn_cli.configs.families.qwen import qwen_moe
from ffn_cli.configs.reader import REQUIRED
from ffn_cli.configs.routing_words import routing_rules
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.mixers import gated_delta_net, mamba2, short_conv
from ffn_cli.models.spec import ModelSpec
from ffn_cli.models.tensor_notes import GATE_HALF, noted
from ffn_cli.spec import MAX_DIM, FFNSpec, check_int

__all__ = ["GRANITEMOEHYBRID", "LFM2", "LFM2_MOE", "QWEN3_NEXT"]


def _qwen3_next(r: FamilyReader, name: str) -> ModelSpec:
    # A hybrid: layer_types (else every full_attention_interval-th layer full) mixes tokens with a
    # Gated DeltaNet, the rest with attention whose q_proj is twice as wide (the second half gates
    # the output), q/k RMSNorm per head. Qwen2-MoE's FFN: routed experts, a shared expert scaled by
    # sigmoid(shared_expert_gate(x)), dense layers where mlp_only_layers or decoder_sparse_step say.
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    types = r.get("layer_types", None)
    if types is None:
        interval = r.integer("full_attention_interval", 4)
        types = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(layers)]
    if not isinstance(types, list) or len(types) != layers or any(t not in ("linear_attention", "full_attention") for t in types):
        raise FFNError(
            r.key("layer_types"), types, _("must list linear_attention or full_attention for each of {layers} layers").format(layers=layers)
        )
    mixer = gated_delta_net(
        d,
        key_heads=r.integer("linear_num_key_heads"),
        key_dim=r.integer("linear_key_head_dim"),
        value_heads=r.integer("linear_num_value_heads"),
        value_dim=r.integer("linear_value_head_dim"),
        conv_kernel=r.integer("linear_conv_kernel_dim"),
        layers=tuple(i for i, t in enumerate(types) if t == "linear_attention"),
    )
    moe_layers, moe, extra = qwen_moe(r, d, normalize=True)
    dense = dense_spec(r, d) if len(moe_layers) < layers else None
    bias = r.flag("attention_bias", False)
    attention = attention_spec(r, d, qkv_bias=bias, qk_norm="head")
    gate: tuple[ParamTensor, ...] = (ParamTensor(noted("q_proj.weight", GATE_HALF), (attention.q_dim, d)),)
    if bias:
        gate += (ParamTensor(noted("q_proj.bias", GATE_HALF), (attention.q_dim,)),)
    return decoder_spec(
        r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, moe_extra=extra, mixer=mixer, attention_extra=gate
    )


def _lfm2_width(r: FamilyReader) -> int:
    """Lfm2MLP's width: block_ff_dim (else intermediate_size); under block_auto_adjust_ff_dim
    cut to 2/3, scaled by block_ffn_dim_multiplier and rounded up to a multiple of block_multiple_of."""
    width = r.integer("block_ff_dim") if r.has("block_ff_dim") else r.integer("intermediate_size")
    if r.flag("block_auto_adjust_ff_dim", r.defaults["block_auto_adjust_ff_dim"]):
        width = int(2 * width / 3)
        multiple = r.integer("block_multiple_of")
        width = int(r.number("block_ffn_dim_multiplier") * width)
        width = multiple * ((width + multiple - 1) // multiple)
    return check_int(r.key("intermediate_size"), width, maximum=MAX_DIM)


def _lfm2_types(r: FamilyReader, layers: int) -> list[str]:
    """layer_types, else (LFM2; LFM2-MoE needs the list) attention in full_attn_idxs (every
    layer when absent) and conv elsewhere."""
    types = r.get("layer_types", None if r.model_type == "lfm2" else REQUIRED)
    if types is None:
        full = set(r.layer_list("full_attn_idxs")) if r.get("full_attn_idxs", None) is not None else set(range(layers))
        types = ["full_attention" if i in full else "conv" for i in range(layers)]
    if not isinstance(types, list) or len(types) != layers or any(not isinstance(t, str) for t in types):
        raise FFNError(
            r.key("layer_types"), types, _("must name conv or an attention kind for each of {layers} layers").format(layers=layers)
        )
    return types


def _lfm2(r: FamilyReader, name: str) -> ModelSpec:
    # LFM2: a short convolution (Lfm2ShortConv) in the layers layer_types calls conv, attention
    # elsewhere (no biases, q/k RMSNorm per head, out_proj); every layer a SwiGLU MLP (w1, w3, w2)
    # of the width _lfm2_width gives; operator_norm and ffn_norm; the final norm is called
    # embedding_norm. tie_embedding and block_ff_dim win over tie_word_embeddings and intermediate_size.
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    types = _lfm2_types(r, layers)
    conv = tuple(i for i, t in enumerate(types) if t == "conv")
    bias = r.flag("conv_bias", r.defaults["conv_bias"])
    mixer = short_conv(d, kernel=r.integer("conv_L_cache"), bias=bias, layers=conv) if conv else None
    attention = attention_spec(r, d, qk_norm="head")
    dense = FFNSpec(variant="swiglu", d_model=d, d_ff=_lfm2_width(r))
    spec = decoder_spec(r, name, attention=attention, dense=dense, mixer=mixer)
    return replace(spec, tie_word_embeddings=r.flag("tie_embedding", spec.tie_word_embeddings)) if r.has("tie_embedding") else spec


def _lfm2_moe(r: FamilyReader, name: str) -> ModelSpec:
    # LFM2-MoE: LFM2's layers (short conv or attention, as layer_types says); the first
    # num_dense_layers keep a SwiGLU MLP of intermediate_size (no width adjustment), the rest
    # route top-k of num_experts SwiGLU experts of moe_intermediate_size by sigmoid scores: a
    # router weight (E, d) without bias, use_expert_bias adding a bias-correction buffer (no parameter;
    # in the checkpoint as expert_bias: router_score_bias).
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    types = _lfm2_types(r, layers)
    conv = tuple(i for i, t in enumerate(types) if t == "conv")
    bias = r.flag("conv_bias", r.defaults["conv_bias"])
    mixer = short_conv(d, kernel=r.integer("conv_L_cache"), bias=bias, layers=conv) if conv else None
    first = r.integer("num_dense_layers", minimum=0)
    moe_layers = tuple(range(min(first, layers), layers))
    moe = None
    if moe_layers:
        moe = moe_spec(
            r,
            d,
            d_ff=r.integer("moe_intermediate_size"),
            experts=r.integer("num_experts"),
            top_k=r.integer("num_experts_per_tok"),
            normalize=r.flag("norm_topk_prob", r.defaults["norm_topk_prob"]),
            expert_variant="swiglu",
        )
    bias_corrected = r.flag("use_expert_bias", r.defaults["use_expert_bias"])
    routing = routing_rules(sigmoid=True, bias_corrected=bias_corrected, scale=r.number("routed_scaling_factor"))
    dense = FFNSpec(variant="swiglu", d_model=d, d_ff=r.integer("intermediate_size")) if first > 0 else None
    attention = attention_spec(r, d, qk_norm="head")
    score_bias = moe is not None and bias_corrected
    spec = decoder_spec(
        r,
        name,
        attention=attention,
        dense=dense,
        moe=moe,
        moe_layers=moe_layers,
        mixer=mixer,
        routing=routing,
        router_score_bias=score_bias,
    )
    return replace(spec, tie_word_embeddings=r.flag("tie_embedding", spec.tie_word_embeddings)) if r.has("tie_embedding") else spec


def _granitemoehybrid(r: FamilyReader, name: str) -> ModelSpec:
    # Granite-4.0-H: Mamba-2 in the layers layer_types (alias layers_block_type) calls mamba or
    # linear_attention (every layer when absent), Granite's attention elsewhere; every layer
    # routes top-k of num_local_experts SwiGLU experts of intermediate_size (router weight, no
    # bias) beside a shared SwiGLU of shared_intermediate_size, or with no experts runs that
    # shared MLP alone. mamba_d_head "auto" is mamba_expand · hidden_size / mamba_n_heads.
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    types = r.get("layer_types", ["mamba"] * layers)
    if not isinstance(types, list) or len(types) != layers or any(not isinstance(t, str) for t in types):
        raise FFNError(r.key("layer_types"), types, _("must name mamba or attention for each of {layers} layers").format(layers=layers))
    mamba_layers = tuple(i for i, t in enumerate(types) if t in ("mamba", "linear_attention"))
    mixer = None
    if mamba_layers:
        heads, inner = r.integer("mamba_n_heads"), r.integer("mamba_expand") * d
        head_dim = r.get("mamba_d_head", "auto")  # the class resolves "auto" on construction
        if head_dim == "auto":
            if inner % heads:
                raise FFNError(r.key("mamba_n_heads"), heads, _("must divide mamba_expand × hidden_size ({inner})").format(inner=inner))
            head_dim = inner // heads
        head_dim = check_int(r.key("mamba_d_head"), head_dim, maximum=MAX_DIM)
        if head_dim * heads != inner:
            raise FFNError(
                r.key("mamba_d_head"),
                head_dim,
                _("× mamba_n_heads ({heads}) must equal mamba_expand × hidden_size ({inner})").format(heads=heads, inner=inner),
            )
        mixer = mamba2(
            d,
            heads=heads,
            head_dim=head_dim,
            groups=r.integer("mamba_n_groups"),
            state=r.integer("mamba_d_state"),
            conv_kernel=r.integer("mamba_d_conv"),
            conv_bias=r.flag("mamba_conv_bias", r.defaults["mamba_conv_bias"]),
            proj_bias=r.flag("mamba_proj_bias", r.defaults["mamba_proj_bias"]),
            layers=mamba_layers,
            chunk=r.integer("mamba_chunk_size"),
        )
    experts, shared = r.integer("num_local_experts", minimum=0), r.integer("shared_intermediate_size", minimum=0)
    attention = attention_spec(r, d, qkv_bias=r.flag("attention_bias", False))
    if not experts:
        dense = FFNSpec(variant=r.variant("hidden_act", gated=True), d_model=d, d_ff=check_int(r.key("shared_intermediate_size"), shared))
        return decoder_spec(r, name, attention=attention, dense=dense, mixer=mixer)
    moe = moe_spec(
        r,
        d,
        d_ff=r.integer("intermediate_size"),
        experts=experts,
        top_k=r.integer("num_experts_per_tok"),
        normalize=True,
        shared=1 if shared else 0,
        shared_d_ff=shared or None,
    )
    return decoder_spec(r, name, attention=attention, moe=moe, moe_layers=every_layer(r), mixer=mixer)


QWEN3_NEXT = Family(("qwen3_next",), _qwen3_next)
LFM2 = Family(("lfm2",), _lfm2)
LFM2_MOE = Family(("lfm2_moe",), _lfm2_moe)
GRANITEMOEHYBRID = Family(("granitemoehybrid",), _granitemoehybrid)
