"""DeepSeek-like MoE: dense first layers, then routed experts beside shared ones, routing by
sigmoid or softmax with a bias correction, groups and a scale (DeepSeek-MoE, V2, V3, GLM-4.5,
dots.llm1, ERNIE 4.5).
"""

from __future__ import annotations

from ffn_cli.accounting import ParamTensor
from ffn_cli.attention import AttentionSpec, LatentAttentionSpec, QKNorm
from ffn_cli.configs.families.common import FamilyReader, attention_spec, decoder_spec, dense_spec, moe_spec
from ffn_cli.configs.families.family import Family
from ffn_cli.configs.routing_words import routing_rules
from ffn_cli.models.spec import ModelSpec
from ffn_cli.spec import FFNSpec

__all__ = ["DEEPSEEK", "DEEPSEEK_V3", "DOTS1", "ERNIE4_5_MOE", "GLM4_MOE"]


def _deepseek(r: FamilyReader, name: str) -> ModelSpec:
    # DeepSeek-MoE (remote code): MoE in layers i ≥ first_k_dense_replace with i % moe_layer_freq == 0.
    d, layers, routed = r.integer("hidden_size"), r.integer("num_hidden_layers"), r.opt_integer("n_routed_experts")
    moe_layers: tuple[int, ...] = ()
    moe = None
    if routed:
        first, every = r.integer("first_k_dense_replace", 0, minimum=0), r.integer("moe_layer_freq", 1)
        moe_layers = tuple(i for i in range(layers) if i >= first and i % every == 0)
        moe = _deepseek_moe(r, d, routed)
    bias = r.flag("attention_bias", False)
    dense = dense_spec(r, d) if len(moe_layers) < layers else None
    return decoder_spec(r, name, attention=attention_spec(r, d, qkv_bias=bias), dense=dense, moe=moe, moe_layers=moe_layers)


def _deepseek_moe(r: FamilyReader, d: int, routed: int) -> FFNSpec:
    # Shared experts are one MLP of width moe_intermediate_size × n_shared_experts, ungated.
    return moe_spec(
        r,
        d,
        d_ff=r.integer("moe_intermediate_size"),
        experts=routed,
        top_k=r.integer("num_experts_per_tok"),
        normalize=r.flag("norm_topk_prob", False),
        shared=r.opt_integer("n_shared_experts", minimum=0) or 0,
    )


def _deepseek_v3(r: FamilyReader, name: str) -> ModelSpec:
    # Multi-head latent attention; MoE in every layer from first_k_dense_replace on (transformers'
    # DeepseekV2/V3 ignore moe_layer_freq); grouped routing and routed_scaling_factor move no parameter,
    # and V3's e_score_correction_bias is a buffer, which checkpoints of its noaux_tc routing store:
    # transformers routes so whatever topk_method says, and builds the buffer; a config naming
    # another method (vLLM's key) ships none.
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    attention = LatentAttentionSpec(
        d_model=d,
        n_heads=r.integer("num_attention_heads"),
        kv_lora_rank=r.integer("kv_lora_rank"),
        qk_nope_head_dim=r.integer("qk_nope_head_dim", minimum=0),
        qk_rope_head_dim=r.integer("qk_rope_head_dim", minimum=0),
        v_head_dim=r.integer("v_head_dim"),
        # An explicit null (V2-Lite) means one q_proj; a missing key takes the class default rank.
        q_lora_rank=None if "q_lora_rank" in r.config and r.config["q_lora_rank"] is None else r.integer("q_lora_rank"),
        bias=r.flag("attention_bias", False),
    )
    first = r.integer("first_k_dense_replace", minimum=0)
    moe_layers = tuple(range(min(first, layers), layers))
    moe = _deepseek_moe(r, d, r.integer("n_routed_experts")) if moe_layers else None
    groups, topk_groups = r.opt_integer("n_group"), r.opt_integer("topk_group")
    # V3 scores experts by sigmoid, choosing on scores plus its correction bias (transformers'
    # DeepseekV3TopkRouter); V2 by softmax, as the built mixture does.
    v3 = r.model_type == "deepseek_v3"
    routing = routing_rules(
        sigmoid=v3, bias_corrected=v3, groups=groups, top_groups=topk_groups, scale=r.number("routed_scaling_factor", 1.0)
    )
    # V2's mlp_bias biases the dense MLPs and the shared experts, never the routed ones (V3 ignores it).
    mlp_bias = r.model_type == "deepseek_v2" and r.flag("mlp_bias", False)
    dense = dense_spec(r, d, bias=mlp_bias) if first > 0 else None
    extra: tuple[ParamTensor, ...] = ()
    if moe is not None and mlp_bias and moe.shared_hidden:
        sh = moe.shared_hidden
        extra = tuple(ParamTensor(f"shared_experts.{n}.bias", (w,)) for n, w in (("gate_proj", sh), ("up_proj", sh), ("down_proj", d)))
    score_bias = v3 and moe is not None and r.config.get("topk_method", "noaux_tc") == "noaux_tc"
    return decoder_spec(
        r,
        name,
        attention=attention,
        dense=dense,
        moe=moe,
        moe_layers=moe_layers,
        moe_extra=extra,
        routing=routing,
        router_score_bias=score_bias,
    )


def _first_dense_moe(r: FamilyReader, name: str, attention: AttentionSpec) -> ModelSpec:
    """GLM-4.5 and dots.llm1: DeepSeek-V3's MoE on grouped-query attention. Layers from
    first_k_dense_replace route: router weight (E, d), a bias-correction buffer (no parameter, in
    the checkpoint: router_score_bias), E SwiGLU experts of moe_intermediate_size and one shared
    MLP of n_shared × that width."""
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    first = r.integer("first_k_dense_replace", minimum=0)
    moe_layers = tuple(range(min(first, layers), layers))
    moe = None
    if moe_layers:
        moe = moe_spec(
            r,
            d,
            d_ff=r.integer("moe_intermediate_size"),
            experts=r.integer("n_routed_experts"),
            top_k=r.integer("num_experts_per_tok"),
            normalize=r.flag("norm_topk_prob", False),
            shared=r.integer("n_shared_experts", minimum=0),
        )
    groups, topk_groups = r.opt_integer("n_group"), r.opt_integer("topk_group")
    routing = routing_rules(
        sigmoid=True, bias_corrected=True, groups=groups, top_groups=topk_groups, scale=r.number("routed_scaling_factor", 1.0)
    )
    dense = dense_spec(r, d) if first > 0 else None
    return decoder_spec(
        r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, routing=routing, router_score_bias=moe is not None
    )


def _glm4_moe(r: FamilyReader, name: str) -> ModelSpec:
    # GLM-4.5: q, k, v biased with attention_bias, o never; use_qk_norm adds RMSNorm(head_dim) on
    # q and k. The multi-token-prediction layers (num_nextn_predict_layers) are not built.
    d = r.integer("hidden_size")
    qk: QKNorm = "head" if r.flag("use_qk_norm", False) else "none"
    attention = attention_spec(r, d, qkv_bias=r.flag("attention_bias", False), o_bias=False, qk_norm=qk)
    return _first_dense_moe(r, name, attention)


def _dots1(r: FamilyReader, name: str) -> ModelSpec:
    # dots.llm1: q, k, v, o biased with attention_bias; q/k RMSNorm per head.
    d = r.integer("hidden_size")
    return _first_dense_moe(r, name, attention_spec(r, d, qkv_bias=r.flag("attention_bias", False), qk_norm="head"))


def _ernie4_5_moe(r: FamilyReader, name: str) -> ModelSpec:
    # ERNIE 4.5: use_bias on q, k, v, o, the dense and shared MLPs and the LM head (never the routed
    # experts); MoE where (i + 1) % moe_layer_interval == 0 within [moe_layer_start_index,
    # moe_layer_end_index]; the router's e_score_correction_bias (1, E) is a parameter (frozen).
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    every = r.integer("moe_layer_interval")
    start, end = r.integer("moe_layer_start_index", minimum=0), r.integer("moe_layer_end_index", minimum=0)
    experts = r.integer("moe_num_experts")
    moe_layers = tuple(i for i in range(layers) if (i + 1) % every == 0 and start <= i <= end)
    bias = r.flag("use_bias", False)
    moe = None
    extra: tuple[ParamTensor, ...] = ()
    if moe_layers:
        shared = r.integer("moe_num_shared_experts", minimum=0)
        moe = moe_spec(
            r, d, d_ff=r.integer("moe_intermediate_size"), experts=experts, top_k=r.integer("moe_k"), normalize=True, shared=shared
        )
        extra = (ParamTensor("gate.moe_statics.e_score_correction_bias", (1, experts)),)
        if bias and moe.shared_hidden:
            sh = moe.shared_hidden
            extra += tuple(ParamTensor(f"shared_experts.{n}.bias", (w,)) for n, w in (("gate_proj", sh), ("up_proj", sh), ("down_proj", d)))
    dense = dense_spec(r, d, bias=bias) if len(moe_layers) < layers else None
    attention = attention_spec(r, d, qkv_bias=bias)
    routing = routing_rules(bias_corrected=True)
    return decoder_spec(
        r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, moe_extra=extra, lm_head_bias=bias, routing=routing
    )


DEEPSEEK = Family(("deepseek",), _deepseek)
DEEPSEEK_V3 = Family(("deepseek_v2", "deepseek_v3"), _deepseek_v3)
GLM4_MOE = Family(("glm4_moe",), _glm4_moe)
DOTS1 = Family(("dots1",), _dots1)
ERNIE4_5_MOE = Family(("ernie4_5_moe",), _ernie4_5_moe)
