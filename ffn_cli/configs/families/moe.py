"""MoE families that route without DeepSeek's first dense layers: Mixtral and its kin (Granite
MoE, Phi-MoE), gpt-oss, Llama 4's interleaved MoE, Hunyuan, MiniMax-M2.
"""

from __future__ import annotations

from typing import Any

from ffn_cli.accounting import ParamTensor
from ffn_cli.configs.families.common import FamilyReader, attention_spec, decoder_spec, dense_spec, every_layer, moe_spec
from ffn_cli.configs.families.family import AttentionReach, Family
from ffn_cli.configs.routing_words import TOP_K_SIGMOID, routing_rules
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.spec import ModelSpec, NormKind
from ffn_cli.spec import MAX_DIM, check_int

__all__ = [
    "GPT_OSS",
    "GPT_OSS_EXPERT_VARIANT",
    "GRANITEMOE",
    "GRANITEMOESHARED",
    "HUNYUAN_V1_MOE",
    "LLAMA4_TEXT",
    "MINIMAX_M2",
    "MIXTRAL",
    "PHIMOE",
]

# gpt-oss's experts: the clamped SwiGLU (α 1.702, limit 7) with biases, the registry's swiglu_clamp.
GPT_OSS_EXPERT_VARIANT = "swiglu_clamp"


def _mixtral_like(
    r: FamilyReader, name: str, *, attention_bias: bool = False, norm: NormKind = "rmsnorm", shared_key: str | None = None, **kw: Any
) -> ModelSpec:
    # Every layer routes: router Linear(d, E, bias=False) and E SwiGLU experts.
    d = r.integer("hidden_size")
    shared = r.integer(shared_key, minimum=0) if shared_key else 0
    moe = moe_spec(
        r,
        d,
        d_ff=r.integer("intermediate_size"),
        experts=r.integer("num_local_experts"),
        top_k=r.integer("num_experts_per_tok"),
        normalize=True,
        shared=1 if shared else 0,
        shared_d_ff=shared or None,
    )
    attention = attention_spec(r, d, qkv_bias=attention_bias)
    return decoder_spec(r, name, attention=attention, moe=moe, moe_layers=every_layer(r), norm=norm, **kw)


def _mixtral(r: FamilyReader, name: str) -> ModelSpec:
    return _mixtral_like(r, name)


def _granitemoe(r: FamilyReader, name: str) -> ModelSpec:
    return _mixtral_like(r, name, attention_bias=r.flag("attention_bias", False))


def _granitemoeshared(r: FamilyReader, name: str) -> ModelSpec:
    # A shared gated MLP (input_linear d → 2·shared, output_linear) beside the routed experts.
    return _mixtral_like(r, name, attention_bias=r.flag("attention_bias", False), shared_key="shared_intermediate_size")


def _phimoe(r: FamilyReader, name: str) -> ModelSpec:
    # LayerNorms with bias; q, k, v, o biased with attention_bias; the head biased with lm_head_bias.
    return _mixtral_like(
        r, name, attention_bias=r.flag("attention_bias", False), norm="layernorm", lm_head_bias=r.flag("lm_head_bias", False)
    )


def _gpt_oss(r: FamilyReader, name: str) -> ModelSpec:
    # q, k, v, o biased, one sink logit per head; every layer routes: router Linear(d, E) with a
    # bias, E SwiGLU experts with biases (gate_up_proj_bias, down_proj_bias), gate clamped.
    d = r.integer("hidden_size")
    attention = attention_spec(r, d, qkv_bias=r.flag("attention_bias", True), sinks=True)
    moe = moe_spec(
        r,
        d,
        d_ff=r.integer("intermediate_size"),
        experts=r.integer("num_local_experts"),
        top_k=r.integer("num_experts_per_tok"),
        normalize=True,
        bias=True,
        expert_variant=GPT_OSS_EXPERT_VARIANT,
    )
    router_bias = (ParamTensor("router.bias", (moe.experts,)),)
    return decoder_spec(r, name, attention=attention, moe=moe, moe_layers=every_layer(r), moe_extra=router_bias)


def _llama4_text(r: FamilyReader, name: str) -> ModelSpec:
    # MoE layers from moe_layers, else every interleave_moe_layer_step-th layer; each routes to
    # top-k of E SwiGLU experts (width intermediate_size) beside one shared expert of the same
    # width; the other layers are dense of intermediate_size_mlp. use_qk_norm is an L2 norm without weights.
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    if r.has("moe_layers"):
        moe_layers = r.layer_list("moe_layers")
        if any(i >= layers for i in moe_layers):
            raise FFNError(
                r.key("moe_layers"), list(moe_layers), _("must be layer indices below num_hidden_layers ({layers})").format(layers=layers)
            )
    else:
        step = r.integer("interleave_moe_layer_step")
        moe_layers = tuple(range(step - 1, layers, step))
    moe = None
    if moe_layers:
        width = r.integer("intermediate_size")
        moe = moe_spec(
            r, d, d_ff=width, experts=r.integer("num_local_experts"), top_k=r.integer("num_experts_per_tok"), normalize=False, shared=1
        )
    dense = dense_spec(r, d, d_ff_key="intermediate_size_mlp") if len(set(moe_layers)) < layers else None
    attention = attention_spec(r, d, qkv_bias=r.flag("attention_bias", False))
    return decoder_spec(r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, routing=TOP_K_SIGMOID)


def _hunyuan_v1_moe(r: FamilyReader, name: str) -> ModelSpec:
    # Hunyuan-A13B as transformers builds it: every layer routes top-k of E SwiGLU experts of
    # intermediate_size (router wg, no bias) beside one shared MLP of the same width; q/k RMSNorm
    # per head (query_layernorm, key_layernorm). moe_topk may be a per-layer list.
    d = r.integer("hidden_size")
    top_k = r.get("moe_topk")
    if isinstance(top_k, list) and top_k:
        if len(set(map(str, top_k))) != 1:
            raise FFNError(r.key("moe_topk"), top_k, _("differs by layer; ffn reads one number of experts per token for every layer"))
        top_k = top_k[0]
    k = check_int(r.key("moe_topk"), top_k, maximum=MAX_DIM)
    experts = r.get("num_experts")
    if isinstance(experts, list) and experts:
        if len(set(map(str, experts))) != 1:
            raise FFNError(r.key("num_experts"), experts, _("differs by layer; ffn reads one number of experts for every layer"))
        experts = experts[0]
    e = check_int(r.key("num_experts"), experts, maximum=MAX_DIM)
    width = r.integer("intermediate_size")
    moe = moe_spec(r, d, d_ff=width, experts=e, top_k=k, normalize=True, shared=1)
    attention = attention_spec(r, d, qkv_bias=r.flag("attention_bias", False), qk_norm="head")
    return decoder_spec(r, name, attention=attention, moe=moe, moe_layers=every_layer(r))


def _minimax_m2(r: FamilyReader, name: str) -> ModelSpec:
    # Every layer routes top-k of E SwiGLU experts of intermediate_size by sigmoid scores with a
    # bias-correction buffer; q/k RMSNorm over the whole projections; no biases. transformers builds
    # the buffer whatever the config says; vLLM loads it from the checkpoint under use_routing_bias
    # (MiniMax-M2's true): a config that says false ships none.
    d = r.integer("hidden_size")
    experts, top_k = r.integer("num_local_experts"), r.integer("num_experts_per_tok")
    moe = moe_spec(r, d, d_ff=r.integer("intermediate_size"), experts=experts, top_k=top_k, normalize=True)
    attention = attention_spec(r, d, qk_norm="proj")
    bias = r.flag("use_routing_bias", True)
    routing = routing_rules(sigmoid=True, bias_corrected=bias)
    return decoder_spec(r, name, attention=attention, moe=moe, moe_layers=every_layer(r), routing=routing, router_score_bias=bias)


MIXTRAL = Family(("mixtral",), _mixtral, reach=AttentionReach(sliding="every_layer"))
GRANITEMOE = Family(("granitemoe",), _granitemoe)
GRANITEMOESHARED = Family(("granitemoeshared",), _granitemoeshared)
PHIMOE = Family(("phimoe",), _phimoe)
GPT_OSS = Family(("gpt_oss",), _gpt_oss, reach=AttentionReach(window=128, sliding="pattern", full_every=2))
LLAMA4_TEXT = Family(
    ("llama4_text",),
    _llama4_text,
    reach=AttentionReach(chunk=8192),
    keyed_value_notes=(("use_qk_norm", "Llama 4's weightless L2 q/k norm (values only)"),),
)
HUNYUAN_V1_MOE = Family(("hunyuan_v1_moe",), _hunyuan_v1_moe)
MINIMAX_M2 = Family(("minimax_m2",), _minimax_m2)
