"""Hugging Face config.json → ModelSpec, one reader per model_type.

Each reader encodes its family's modelling code (transformers' modeling_<type>.py, DeepSeek's
modeling_deepseek.py for the first DeepSeek-MoE): which projections carry biases, head_dim,
q/k norms, how many norms a layer holds, fused projections, which layers are MoE. A key a
config leaves out takes its config class's default (ffn_cli.models.defaults), so a config that
omits a key counts as transformers builds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ffn_cli.accounting import ParamTensor
from ffn_cli.attention import AnyAttention, AttentionSpec, LatentAttentionSpec, QKNorm
from ffn_cli.errors import FFNError
from ffn_cli.i18n import N_, Message, _
from ffn_cli.models.defaults import ALIASES, DEFAULTS, TEXT_DEFAULTS, VISION_DEFAULTS
from ffn_cli.models.mixers import gated_delta_net, mamba2, short_conv
from ffn_cli.models.reader import REQUIRED, ConfigReader
from ffn_cli.models.routing_words import TOP_K_SIGMOID, routing_rules
from ffn_cli.models.spec import MAX_LAYERS, ExtraPart, ModelSpec, NormKind
from ffn_cli.models.unknown import UnknownModelType
from ffn_cli.models.vision import VisionTower, llama4_tower, pixtral_tower, siglip_tower
from ffn_cli.spec import MAX_DIM, FFNSpec, check_int

__all__ = ["GEMMA3N_WIDTH", "GPT_OSS_EXPERT_VARIANT", "SUPPORTED_MODEL_TYPES", "UnknownModelType", "model_spec_from_config"]

# gpt-oss's experts: the clamped SwiGLU (α 1.702, limit 7) with biases, the registry's swiglu_clamp.
GPT_OSS_EXPERT_VARIANT = "swiglu_clamp"

# Hugging Face activation names → the registry's activation names.
_ACTIVATIONS = {
    "silu": "silu",
    "swish": "silu",
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_tanh": "gelu_tanh",
    "relu": "relu",
    "relu2": "relu2",
    "sigmoid": "sigmoid",
    "xielu": "xielu",
}
# The registry variant a gated (GLU) or a plain two-layer MLP uses for an activation.
_GATED = {"silu": "swiglu", "gelu": "geglu", "gelu_tanh": "geglu", "relu": "reglu", "sigmoid": "glu"}
_DENSE = {"silu": "silu", "gelu": "gelu", "gelu_tanh": "gelu_tanh", "relu": "relu", "relu2": "relu2", "xielu": "xielu"}
# An activation the registry lacks (quick_gelu, mish, …) moves no parameter: it is counted
# with a variant of the same layout and named in the model's detail.
_STAND_IN = {"gated": "swiglu", "dense": "gelu"}


class _Reader(ConfigReader):
    """A ConfigReader that knows its family's defaults and how the family names activations."""

    def __init__(self, config: Mapping[str, Any], model_type: str, source: str, prefix: str = "") -> None:
        super().__init__(config, model_type, source, ALIASES.get(model_type), prefix)
        self.defaults = DEFAULTS.get(model_type, {})
        self.hidden_act = ""

    def get(self, key: str, default: Any = REQUIRED) -> Any:
        if default is REQUIRED and key in self.defaults:
            default = self.defaults[key]
        return super().get(key, default)

    def opt_integer(self, key: str, default: int | None = None, *, minimum: int = 1) -> int | None:
        return super().opt_integer(key, default if default is not None else self.defaults.get(key), minimum=minimum)

    def variant(self, *keys: str, gated: bool) -> str:
        """The registry variant for the config's activation; any string is accepted for counting."""
        name = next((self.config[k] for k in keys if self.config.get(k) is not None), None)
        if name is None:
            name = next((self.defaults[k] for k in keys if k in self.defaults), "silu" if gated else "gelu")
        if not isinstance(name, str) or not name:
            raise FFNError(self.key(keys[0]), name, _("must be an activation name such as silu or gelu"))
        table = _GATED if gated else _DENSE
        act = _ACTIVATIONS.get(name)
        if act in table:
            return table[act]
        self.hidden_act = name
        return _STAND_IN["gated" if gated else "dense"]


# --- shared pieces ----------------------------------------------------------------------------


def _heads(r: _Reader, d: int, *, head_dim_key: bool = True) -> tuple[int, int, int | None]:
    heads = r.integer("num_attention_heads")
    kv = r.opt_integer("num_key_value_heads") or heads
    head_dim = r.opt_integer("head_dim") if head_dim_key else None
    if head_dim is None and d % heads:
        hint = _(", or the config must give head_dim") if head_dim_key else ""
        raise FFNError(r.key("num_attention_heads"), heads, _("must divide hidden_size ({d}){hint}").format(d=d, hint=hint))
    return heads, kv, head_dim


def _attention(
    r: _Reader,
    d: int,
    *,
    qkv_bias: bool = False,
    o_bias: bool | None = None,
    qk_norm: QKNorm = "none",
    qk_norm_bias: bool = False,
    sinks: bool = False,
    kv_heads: int | None = None,
    head_dim_key: bool = True,
) -> AttentionSpec:
    heads, kv, head_dim = _heads(r, d, head_dim_key=head_dim_key)
    if heads % (kv_heads or kv):
        raise FFNError(r.key("num_key_value_heads"), kv_heads or kv, _("must divide num_attention_heads ({heads})").format(heads=heads))
    return AttentionSpec(
        d_model=d,
        n_heads=heads,
        n_kv_heads=kv_heads or kv,
        head_dim=head_dim,
        qkv_bias=qkv_bias,
        o_bias=qkv_bias if o_bias is None else o_bias,
        qk_norm=qk_norm,
        qk_norm_bias=qk_norm_bias,
        sinks=sinks,
    )


def _dense_ffn(
    r: _Reader,
    d: int,
    *,
    gated: bool = True,
    bias: bool = False,
    fused: bool = False,
    d_ff_key: str = "intermediate_size",
    act_keys: tuple[str, ...] = ("hidden_act",),
) -> FFNSpec:
    return FFNSpec(variant=r.variant(*act_keys, gated=gated), d_model=d, d_ff=r.integer(d_ff_key), bias=bias, fused_gate_up=fused)


def _moe(
    r: _Reader,
    d: int,
    *,
    d_ff: int,
    experts: int,
    top_k: int,
    normalize: bool,
    shared: int = 0,
    bias: bool = False,
    expert_variant: str | None = None,
    **extra: Any,
) -> FFNSpec:
    if top_k > experts:
        raise FFNError(r.key("num_experts_per_tok"), top_k, _("must be at most the number of experts ({experts})").format(experts=experts))
    return FFNSpec(
        variant="moe",
        d_model=d,
        d_ff=d_ff,
        experts=experts,
        top_k=top_k,
        expert_variant=expert_variant or r.variant("hidden_act", gated=True),
        shared_experts=shared,
        normalize_top_k=normalize,
        bias=bias,
        **extra,
    )


def _model(
    r: _Reader,
    name: str,
    *,
    attention: AnyAttention,
    dense: FFNSpec | None = None,
    moe: FFNSpec | None = None,
    moe_layers: tuple[int, ...] = (),
    norm: NormKind = "rmsnorm",
    norms_per_layer: int = 2,
    n_layers: int | None = None,
    **fields: Any,
) -> ModelSpec:
    """A decoder: token embeddings, layers, final norm, LM head (tied as the config says)."""
    return ModelSpec(
        name=name,
        model_type=r.model_type,
        d_model=attention.d_model,
        n_layers=r.integer("num_hidden_layers") if n_layers is None else n_layers,
        vocab_size=r.integer("vocab_size"),
        attention=attention,
        dense_ffn=dense,
        moe_ffn=moe,
        moe_layers=moe_layers,
        norm=norm,
        norms_per_layer=norms_per_layer,
        tie_word_embeddings=r.flag("tie_word_embeddings", r.defaults.get("tie_word_embeddings", False)),
        hidden_act=r.hidden_act,
        source=r.source,
        **fields,
    )


def _llama_like(
    r: _Reader, name: str, *, qkv_bias: bool = False, o_bias: bool | None = None, mlp_bias: bool = False, fused: bool = False, **kw: Any
) -> ModelSpec:
    d = r.integer("hidden_size")
    attention = _attention(r, d, qkv_bias=qkv_bias, o_bias=o_bias, qk_norm=kw.pop("qk_norm", "none"))
    dense = _dense_ffn(r, d, bias=mlp_bias, fused=fused, act_keys=kw.pop("act_keys", ("hidden_act",)))
    return _model(r, name, attention=attention, dense=dense, fused_qkv=fused, **kw)


def _every_layer(r: _Reader) -> tuple[int, ...]:
    return tuple(range(r.integer("num_hidden_layers")))


def _sparse_step_layers(r: _Reader, experts: int) -> tuple[int, ...]:
    """Qwen2/3-MoE: MoE where (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers."""
    step, mlp_only = r.integer("decoder_sparse_step"), set(r.layer_list("mlp_only_layers"))
    return tuple(i for i in _every_layer(r) if i not in mlp_only and experts > 0 and (i + 1) % step == 0)


# --- readers ----------------------------------------------------------------------------------


def _llama(r: _Reader, name: str) -> ModelSpec:
    bias = r.flag("attention_bias", False)
    return _llama_like(r, name, qkv_bias=bias, mlp_bias=r.flag("mlp_bias", False))


def _mistral(r: _Reader, name: str) -> ModelSpec:
    return _llama_like(r, name)  # no biases anywhere; GQA and head_dim come from the config


def _granite(r: _Reader, name: str) -> ModelSpec:
    # LLaMA's shape; its embedding, residual, attention and logit multipliers are scalars, not parameters.
    bias = r.flag("attention_bias", False)
    return _llama_like(r, name, qkv_bias=bias, mlp_bias=r.flag("mlp_bias", False))


def _mixtral_like(
    r: _Reader, name: str, *, attention_bias: bool = False, norm: NormKind = "rmsnorm", shared_key: str | None = None, **kw: Any
) -> ModelSpec:
    # Every layer routes: router Linear(d, E, bias=False) and E SwiGLU experts.
    d = r.integer("hidden_size")
    shared = r.integer(shared_key, minimum=0) if shared_key else 0
    moe = _moe(
        r,
        d,
        d_ff=r.integer("intermediate_size"),
        experts=r.integer("num_local_experts"),
        top_k=r.integer("num_experts_per_tok"),
        normalize=True,
        shared=1 if shared else 0,
        shared_d_ff=shared or None,
    )
    attention = _attention(r, d, qkv_bias=attention_bias)
    return _model(r, name, attention=attention, moe=moe, moe_layers=_every_layer(r), norm=norm, **kw)


def _mixtral(r: _Reader, name: str) -> ModelSpec:
    return _mixtral_like(r, name)


def _granitemoe(r: _Reader, name: str) -> ModelSpec:
    return _mixtral_like(r, name, attention_bias=r.flag("attention_bias", False))


def _granitemoeshared(r: _Reader, name: str) -> ModelSpec:
    # A shared gated MLP (input_linear d → 2·shared, output_linear) beside the routed experts.
    return _mixtral_like(r, name, attention_bias=r.flag("attention_bias", False), shared_key="shared_intermediate_size")


def _phimoe(r: _Reader, name: str) -> ModelSpec:
    # LayerNorms with bias; q, k, v, o biased with attention_bias; the head biased with lm_head_bias.
    return _mixtral_like(
        r, name, attention_bias=r.flag("attention_bias", False), norm="layernorm", lm_head_bias=r.flag("lm_head_bias", False)
    )


def _qwen2(r: _Reader, name: str) -> ModelSpec:
    return _llama_like(r, name, qkv_bias=True, o_bias=False)  # Qwen2Attention: q, k, v biased, o not


def _qwen2_moe(r: _Reader, name: str) -> ModelSpec:
    d, experts = r.integer("hidden_size"), r.integer("num_experts", minimum=0)
    moe_layers = _sparse_step_layers(r, experts)
    moe = None
    if moe_layers:
        # One shared expert of its own width, scaled by sigmoid(shared_expert_gate(x)); the gate
        # Linear(d, 1) is built even when the shared expert has width 0.
        shared = r.integer("shared_expert_intermediate_size", minimum=0)
        moe = _moe(
            r,
            d,
            d_ff=r.integer("moe_intermediate_size"),
            experts=experts,
            top_k=r.integer("num_experts_per_tok"),
            normalize=r.flag("norm_topk_prob", False),
            shared=1 if shared else 0,
            shared_d_ff=shared or None,
            shared_expert_gate=bool(shared),
        )
    bias = r.flag("qkv_bias", True)
    dense = _dense_ffn(r, d) if len(moe_layers) < r.integer("num_hidden_layers") else None
    # Width 0 leaves an empty shared expert, but its gate Linear(d, 1) is still built.
    extra = (ParamTensor("shared_expert_gate.weight", (1, d)),) if moe is not None and not moe.shared_hidden else ()
    attention = _attention(r, d, qkv_bias=bias, o_bias=False)
    return _model(r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, moe_extra=extra)


def _qwen3(r: _Reader, name: str) -> ModelSpec:
    bias = r.flag("attention_bias", False)
    return _llama_like(r, name, qkv_bias=bias, qk_norm="head")  # q_norm, k_norm: RMSNorm(head_dim)


def _qwen3_moe(r: _Reader, name: str) -> ModelSpec:
    d, experts = r.integer("hidden_size"), r.integer("num_local_experts", minimum=0)
    moe_layers = _sparse_step_layers(r, experts)
    moe = None
    if moe_layers:
        moe = _moe(
            r,
            d,
            d_ff=r.integer("moe_intermediate_size"),
            experts=experts,
            top_k=r.integer("num_experts_per_tok"),
            normalize=r.flag("norm_topk_prob", False),
        )
    dense = _dense_ffn(r, d) if len(moe_layers) < r.integer("num_hidden_layers") else None
    attention = _attention(r, d, qkv_bias=r.flag("attention_bias", False), qk_norm="head")
    return _model(r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers)


def _gemma(r: _Reader, name: str) -> ModelSpec:
    # Tied embeddings and head_dim 256 by default; GemmaRMSNorm keeps one weight (applied as 1 + w).
    bias = r.flag("attention_bias", False)
    return _llama_like(r, name, qkv_bias=bias, act_keys=("hidden_activation", "hidden_act"))


def _gemma2(r: _Reader, name: str) -> ModelSpec:
    # Norms before and after both attention and FFN: 4 per layer. Soft-capping has no parameters.
    bias = r.flag("attention_bias", False)
    return _llama_like(r, name, qkv_bias=bias, act_keys=("hidden_activation", "hidden_act"), norms_per_layer=4)


def _gemma3_text(r: _Reader, name: str) -> ModelSpec:
    bias = r.flag("attention_bias", False)
    return _llama_like(r, name, qkv_bias=bias, act_keys=("hidden_activation", "hidden_act"), norms_per_layer=4, qk_norm="head")


def _olmo(r: _Reader, name: str) -> ModelSpec:
    bias = r.flag("attention_bias", False)
    return _llama_like(r, name, qkv_bias=bias, o_bias=bias, norm="layernorm_no_affine")  # OLMo-1: LayerNorm without weight or bias


def _olmo2(r: _Reader, name: str) -> ModelSpec:
    # Post-norms only (after attention, after the FFN) and q/k RMSNorms over the whole projections.
    bias = r.flag("attention_bias", False)
    return _llama_like(r, name, qkv_bias=bias, qk_norm="proj")


def _phi3(r: _Reader, name: str) -> ModelSpec:
    return _llama_like(r, name, fused=True)  # one qkv_proj and one gate_up_proj (gate first), no biases


def _phi(r: _Reader, name: str) -> ModelSpec:
    # Phi-1/2: one LayerNorm feeds attention and MLP in parallel; biases everywhere, a biased head;
    # qk_layernorm adds LayerNorm(head_dim) on q and k.
    d = r.integer("hidden_size")
    qk: QKNorm = "head" if r.flag("qk_layernorm", False) else "none"
    attention = _attention(r, d, qkv_bias=True, qk_norm=qk, qk_norm_bias=True)
    dense = _dense_ffn(r, d, gated=False, bias=True)
    return _model(r, name, attention=attention, dense=dense, norm="layernorm", norms_per_layer=1, parallel_block=True, lm_head_bias=True)


def _gpt_neox(r: _Reader, name: str) -> ModelSpec:
    # Pythia: fused query_key_value, LayerNorms before attention and before the MLP (parallel residual by default).
    d = r.integer("hidden_size")
    bias = r.flag("attention_bias", True)
    attention = _attention(r, d, qkv_bias=bias, head_dim_key=False)  # query_key_value is d → 3·d whatever head_dim says
    dense = _dense_ffn(r, d, gated=False, bias=True)
    parallel = r.flag("use_parallel_residual", True)
    return _model(r, name, attention=attention, dense=dense, norm="layernorm", fused_qkv=True, parallel_block=parallel)


def _falcon(r: _Reader, name: str) -> ModelSpec:
    # One fused query_key_value: multi-query (one KV head), or num_kv_heads under the new decoder
    # architecture; `bias` on every Linear; 1 or 2 LayerNorms per layer.
    d = r.integer("hidden_size")
    new, multi_query, parallel = r.flag("new_decoder_architecture", False), r.flag("multi_query", True), r.flag("parallel_attn", True)
    heads = r.integer("num_attention_heads")
    kv = (r.opt_integer("num_kv_heads") or heads) if new or not multi_query else 1
    bias = r.flag("bias", False)
    attention = _attention(r, d, qkv_bias=bias, kv_heads=kv, head_dim_key=False)
    ffn_key = "ffn_hidden_size" if r.has("ffn_hidden_size") else None
    d_ff = r.integer(ffn_key) if ffn_key else 4 * d
    dense = FFNSpec(variant=r.variant("activation", gated=False), d_model=d, d_ff=d_ff, bias=bias)
    ln = r.opt_integer("num_ln_in_parallel_attn") or (2 if new else 1)
    norms = 2 if not parallel or ln == 2 else 1
    return _model(
        r, name, attention=attention, dense=dense, norm="layernorm", norms_per_layer=norms, fused_qkv=True, parallel_block=parallel
    )


def _starcoder2(r: _Reader, name: str) -> ModelSpec:
    # q, k, v, o and c_fc, c_proj all biased with use_bias; LayerNorms with bias; plain GELU MLP.
    d = r.integer("hidden_size")
    bias = r.flag("use_bias", True)
    attention = _attention(r, d, qkv_bias=bias)
    dense = _dense_ffn(r, d, gated=False, bias=bias)
    return _model(r, name, attention=attention, dense=dense, norm="layernorm")


def _deepseek(r: _Reader, name: str) -> ModelSpec:
    # DeepSeek-MoE (remote code): MoE in layers i ≥ first_k_dense_replace with i % moe_layer_freq == 0.
    d, layers, routed = r.integer("hidden_size"), r.integer("num_hidden_layers"), r.opt_integer("n_routed_experts")
    moe_layers: tuple[int, ...] = ()
    moe = None
    if routed:
        first, every = r.integer("first_k_dense_replace", 0, minimum=0), r.integer("moe_layer_freq", 1)
        moe_layers = tuple(i for i in range(layers) if i >= first and i % every == 0)
        moe = _deepseek_moe(r, d, routed)
    bias = r.flag("attention_bias", False)
    dense = _dense_ffn(r, d) if len(moe_layers) < layers else None
    return _model(r, name, attention=_attention(r, d, qkv_bias=bias), dense=dense, moe=moe, moe_layers=moe_layers)


def _deepseek_moe(r: _Reader, d: int, routed: int) -> FFNSpec:
    # Shared experts are one MLP of width moe_intermediate_size × n_shared_experts, ungated.
    return _moe(
        r,
        d,
        d_ff=r.integer("moe_intermediate_size"),
        experts=routed,
        top_k=r.integer("num_experts_per_tok"),
        normalize=r.flag("norm_topk_prob", False),
        shared=r.opt_integer("n_shared_experts", minimum=0) or 0,
    )


def _deepseek_v3(r: _Reader, name: str) -> ModelSpec:
    # Multi-head latent attention; MoE in every layer from first_k_dense_replace on (transformers'
    # DeepseekV2/V3 ignore moe_layer_freq); grouped routing and routed_scaling_factor move no parameter,
    # and V3's e_score_correction_bias is a buffer.
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
    dense = _dense_ffn(r, d, bias=mlp_bias) if first > 0 else None
    extra: tuple[ParamTensor, ...] = ()
    if moe is not None and mlp_bias and moe.shared_hidden:
        sh = moe.shared_hidden
        extra = tuple(ParamTensor(f"shared_experts.{n}.bias", (w,)) for n, w in (("gate_proj", sh), ("up_proj", sh), ("down_proj", d)))
    return _model(r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, moe_extra=extra, routing=routing)


def _gpt_oss(r: _Reader, name: str) -> ModelSpec:
    # q, k, v, o biased, one sink logit per head; every layer routes: router Linear(d, E) with a
    # bias, E SwiGLU experts with biases (gate_up_proj_bias, down_proj_bias), gate clamped.
    d = r.integer("hidden_size")
    attention = _attention(r, d, qkv_bias=r.flag("attention_bias", True), sinks=True)
    moe = _moe(
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
    return _model(r, name, attention=attention, moe=moe, moe_layers=_every_layer(r), moe_extra=router_bias)


def _llama4_text(r: _Reader, name: str) -> ModelSpec:
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
        moe = _moe(
            r, d, d_ff=width, experts=r.integer("num_local_experts"), top_k=r.integer("num_experts_per_tok"), normalize=False, shared=1
        )
    dense = _dense_ffn(r, d, d_ff_key="intermediate_size_mlp") if len(set(moe_layers)) < layers else None
    attention = _attention(r, d, qkv_bias=r.flag("attention_bias", False))
    return _model(r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, routing=TOP_K_SIGMOID)


def _gpt2(r: _Reader, name: str) -> ModelSpec:
    # Conv1D c_attn (d → 3d) and c_proj with biases, learned positions, LayerNorms, ln_f, head tied
    # to wte; add_cross_attention adds a cross-attention (q_attn, c_attn d → 2d, c_proj) and its LayerNorm.
    d = r.integer("n_embd")
    heads = r.integer("n_head")
    if d % heads:
        raise FFNError("n_head", heads, _("must divide n_embd ({d})").format(d=d))
    cross = r.flag("add_cross_attention", False)
    dense = FFNSpec(variant=r.variant("activation_function", gated=False), d_model=d, d_ff=r.opt_integer("n_inner") or 4 * d, bias=True)
    return ModelSpec(
        name=name,
        model_type="gpt2",
        d_model=d,
        n_layers=r.integer("n_layer"),
        vocab_size=r.integer("vocab_size"),
        attention=AttentionSpec(d_model=d, n_heads=heads, qkv_bias=True, o_bias=True),
        dense_ffn=dense,
        max_positions=r.integer("n_positions"),
        norm="layernorm",
        norms_per_layer=3 if cross else 2,
        cross_attention=cross,
        tie_word_embeddings=r.flag("tie_word_embeddings", True),
        fused_qkv=True,
        hidden_act=r.hidden_act,
        source=r.source,
    )


def _bert(r: _Reader, name: str) -> ModelSpec:
    # BertModel (RoBERTa, XLM-R alike): word + position + token-type embeddings and their LayerNorm,
    # post-norm layers, pooler. RoBERTa's padding-offset positions are rows of the same table.
    d = r.integer("hidden_size")
    heads = r.integer("num_attention_heads")
    if d % heads:
        raise FFNError(r.key("num_attention_heads"), heads, _("must divide hidden_size ({d})").format(d=d))
    return ModelSpec(
        name=name,
        model_type=r.model_type,
        d_model=d,
        n_layers=r.integer("num_hidden_layers"),
        vocab_size=r.integer("vocab_size"),
        attention=AttentionSpec(d_model=d, n_heads=heads, qkv_bias=True, o_bias=True),
        dense_ffn=_dense_ffn(r, d, gated=False, bias=True),
        max_positions=r.integer("max_position_embeddings"),
        type_vocab_size=r.integer("type_vocab_size", minimum=0),
        norm="layernorm",
        final_norm=False,
        embedding_norm=True,
        lm_head=False,
        pooler=True,
        hidden_act=r.hidden_act,
        source=r.source,
    )


# --- the families of 2025 ----------------------------------------------------------------------


def _smollm3(r: _Reader, name: str) -> ModelSpec:
    # LLaMA's layout; no_rope_layers and the sliding window move no parameter.
    return _llama_like(r, name, qkv_bias=r.flag("attention_bias", False), mlp_bias=r.flag("mlp_bias", False))


def _seed_oss(r: _Reader, name: str) -> ModelSpec:
    # q, k, v biased with attention_bias, o with its own attention_out_bias.
    bias = r.flag("attention_bias", True)
    return _llama_like(r, name, qkv_bias=bias, o_bias=r.flag("attention_out_bias", False), mlp_bias=r.flag("mlp_bias", False))


def _exaone4(r: _Reader, name: str) -> ModelSpec:
    # No biases; q/k RMSNorm per head; norms after attention and after the FFN only (2 per layer).
    return _llama_like(r, name, qk_norm="head")


def _glm4(r: _Reader, name: str) -> ModelSpec:
    # One gate_up_proj (gate first); q, k, v biased with attention_bias, o never; 4 norms per
    # layer (before and after attention and FFN).
    d = r.integer("hidden_size")
    attention = _attention(r, d, qkv_bias=r.flag("attention_bias", True), o_bias=False)
    return _model(r, name, attention=attention, dense=_dense_ffn(r, d, fused=True), norms_per_layer=4)


def _apertus(r: _Reader, name: str) -> ModelSpec:
    # An ungated MLP (up, xIELU with its two learnable scalars, down); q/k RMSNorm per head.
    d = r.integer("hidden_size")
    attention = _attention(r, d, qkv_bias=r.flag("attention_bias", False), qk_norm="head")
    return _model(r, name, attention=attention, dense=_dense_ffn(r, d, gated=False))


def _cohere2(r: _Reader, name: str) -> ModelSpec:
    # Command R7B: one LayerNorm (weight, no bias) feeds attention and the gated MLP in parallel;
    # tied head; logit_scale is a scalar of the forward, not a parameter. head_dim is
    # hidden_size / heads unless the config gives one (the class has no default of its own).
    d = r.integer("hidden_size")
    attention = _attention(r, d, qkv_bias=r.flag("attention_bias", False))
    return _model(r, name, attention=attention, dense=_dense_ffn(r, d), norm="layernorm_no_bias", norms_per_layer=1, parallel_block=True)


def _first_dense_moe(r: _Reader, name: str, attention: AttentionSpec) -> ModelSpec:
    """GLM-4.5 and dots.llm1: DeepSeek-V3's MoE on grouped-query attention. Layers from
    first_k_dense_replace route: router weight (E, d), a bias-correction buffer (no parameter),
    E SwiGLU experts of moe_intermediate_size and one shared MLP of n_shared × that width."""
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    first = r.integer("first_k_dense_replace", minimum=0)
    moe_layers = tuple(range(min(first, layers), layers))
    moe = None
    if moe_layers:
        moe = _moe(
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
    dense = _dense_ffn(r, d) if first > 0 else None
    return _model(r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, routing=routing)


def _glm4_moe(r: _Reader, name: str) -> ModelSpec:
    # GLM-4.5: q, k, v biased with attention_bias, o never; use_qk_norm adds RMSNorm(head_dim) on
    # q and k. The multi-token-prediction layers (num_nextn_predict_layers) are not built.
    d = r.integer("hidden_size")
    qk: QKNorm = "head" if r.flag("use_qk_norm", False) else "none"
    attention = _attention(r, d, qkv_bias=r.flag("attention_bias", False), o_bias=False, qk_norm=qk)
    return _first_dense_moe(r, name, attention)


def _dots1(r: _Reader, name: str) -> ModelSpec:
    # dots.llm1: q, k, v, o biased with attention_bias; q/k RMSNorm per head.
    d = r.integer("hidden_size")
    return _first_dense_moe(r, name, _attention(r, d, qkv_bias=r.flag("attention_bias", False), qk_norm="head"))


def _ernie4_5_moe(r: _Reader, name: str) -> ModelSpec:
    # ERNIE 4.5: use_bias on q, k, v, o, the dense and shared MLPs and the LM head (never the routed
    # experts); MoE where (i + 1) % moe_layer_interval == 0 within [moe_layer_start_index,
    # moe_layer_end_index]; the router's e_score_correction_bias (1, E) is a parameter (frozen).
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    every = r.integer("moe_layer_interval")
    start, end = r.integer("moe_layer_start_index", minimum=0), r.integer("moe_layer_end_index", minimum=0)
    experts = r.integer("moe_num_experts")
    moe_layers = tuple(i for i in range(layers) if (i + 1) % every == 0 and start <= i <= end)
    bias = r.flag("use_bias", False)
    moe, extra = None, ()
    if moe_layers:
        shared = r.integer("moe_num_shared_experts", minimum=0)
        moe = _moe(r, d, d_ff=r.integer("moe_intermediate_size"), experts=experts, top_k=r.integer("moe_k"), normalize=True, shared=shared)
        extra = (ParamTensor("gate.moe_statics.e_score_correction_bias", (1, experts)),)
        if bias and moe.shared_hidden:
            sh = moe.shared_hidden
            extra += tuple(ParamTensor(f"shared_experts.{n}.bias", (w,)) for n, w in (("gate_proj", sh), ("up_proj", sh), ("down_proj", d)))
    dense = _dense_ffn(r, d, bias=bias) if len(moe_layers) < layers else None
    attention = _attention(r, d, qkv_bias=bias)
    routing = routing_rules(bias_corrected=True)
    return _model(
        r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, moe_extra=extra, lm_head_bias=bias, routing=routing
    )


def _hunyuan_v1_moe(r: _Reader, name: str) -> ModelSpec:
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
    moe = _moe(r, d, d_ff=width, experts=e, top_k=k, normalize=True, shared=1)
    attention = _attention(r, d, qkv_bias=r.flag("attention_bias", False), qk_norm="head")
    return _model(r, name, attention=attention, moe=moe, moe_layers=_every_layer(r))


def _minimax_m2(r: _Reader, name: str) -> ModelSpec:
    # Every layer routes top-k of E SwiGLU experts of intermediate_size by sigmoid scores with a
    # bias-correction buffer; q/k RMSNorm over the whole projections; no biases.
    d = r.integer("hidden_size")
    experts, top_k = r.integer("num_local_experts"), r.integer("num_experts_per_tok")
    moe = _moe(r, d, d_ff=r.integer("intermediate_size"), experts=experts, top_k=top_k, normalize=True)
    attention = _attention(r, d, qk_norm="proj")
    routing = routing_rules(sigmoid=True, bias_corrected=True)
    return _model(r, name, attention=attention, moe=moe, moe_layers=_every_layer(r), routing=routing)


def _qwen3_next(r: _Reader, name: str) -> ModelSpec:
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
    experts = r.integer("num_experts", minimum=0)
    moe_layers = _sparse_step_layers(r, experts)
    moe = None
    if moe_layers:
        shared = r.integer("shared_expert_intermediate_size", minimum=0)
        moe = _moe(
            r,
            d,
            d_ff=r.integer("moe_intermediate_size"),
            experts=experts,
            top_k=r.integer("num_experts_per_tok"),
            normalize=r.flag("norm_topk_prob", True),
            shared=1 if shared else 0,
            shared_d_ff=shared or None,
            shared_expert_gate=bool(shared),
        )
    extra = (ParamTensor("shared_expert_gate.weight", (1, d)),) if moe is not None and not moe.shared_hidden else ()
    dense = _dense_ffn(r, d) if len(moe_layers) < layers else None
    bias = r.flag("attention_bias", False)
    attention = _attention(r, d, qkv_bias=bias, qk_norm="head")
    gate = (ParamTensor("q_proj.weight (output gate half)", (attention.q_dim, d)),)
    if bias:
        gate += (ParamTensor("q_proj.bias (output gate half)", (attention.q_dim,)),)
    return _model(
        r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, moe_extra=extra, mixer=mixer, attention_extra=gate
    )


def _lfm2_width(r: _Reader) -> int:
    """Lfm2MLP's width: block_ff_dim (else intermediate_size); under block_auto_adjust_ff_dim
    cut to 2/3, scaled by block_ffn_dim_multiplier and rounded up to a multiple of block_multiple_of."""
    width = r.integer("block_ff_dim") if r.has("block_ff_dim") else r.integer("intermediate_size")
    if r.flag("block_auto_adjust_ff_dim", r.defaults["block_auto_adjust_ff_dim"]):
        width = int(2 * width / 3)
        multiple = r.integer("block_multiple_of")
        width = int(r.number("block_ffn_dim_multiplier") * width)
        width = multiple * ((width + multiple - 1) // multiple)
    return check_int(r.key("intermediate_size"), width, maximum=MAX_DIM)


def _lfm2_types(r: _Reader, layers: int) -> list[str]:
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


def _lfm2(r: _Reader, name: str) -> ModelSpec:
    # LFM2: a short convolution (Lfm2ShortConv) in the layers layer_types calls conv, attention
    # elsewhere (no biases, q/k RMSNorm per head, out_proj); every layer a SwiGLU MLP (w1, w3, w2)
    # of the width _lfm2_width gives; operator_norm and ffn_norm; the final norm is called
    # embedding_norm. tie_embedding and block_ff_dim win over tie_word_embeddings and intermediate_size.
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    types = _lfm2_types(r, layers)
    conv = tuple(i for i, t in enumerate(types) if t == "conv")
    bias = r.flag("conv_bias", r.defaults["conv_bias"])
    mixer = short_conv(d, kernel=r.integer("conv_L_cache"), bias=bias, layers=conv) if conv else None
    attention = _attention(r, d, qk_norm="head")
    dense = FFNSpec(variant="swiglu", d_model=d, d_ff=_lfm2_width(r))
    spec = _model(r, name, attention=attention, dense=dense, mixer=mixer)
    return replace(spec, tie_word_embeddings=r.flag("tie_embedding", spec.tie_word_embeddings)) if r.has("tie_embedding") else spec


def _lfm2_moe(r: _Reader, name: str) -> ModelSpec:
    # LFM2-MoE: LFM2's layers (short conv or attention, as layer_types says); the first
    # num_dense_layers keep a SwiGLU MLP of intermediate_size (no width adjustment), the rest
    # route top-k of num_experts SwiGLU experts of moe_intermediate_size by sigmoid scores: a
    # router weight (E, d) without bias, use_expert_bias adding a bias-correction buffer (no parameter).
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    types = _lfm2_types(r, layers)
    conv = tuple(i for i, t in enumerate(types) if t == "conv")
    bias = r.flag("conv_bias", r.defaults["conv_bias"])
    mixer = short_conv(d, kernel=r.integer("conv_L_cache"), bias=bias, layers=conv) if conv else None
    first = r.integer("num_dense_layers", minimum=0)
    moe_layers = tuple(range(min(first, layers), layers))
    moe = None
    if moe_layers:
        moe = _moe(
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
    attention = _attention(r, d, qk_norm="head")
    spec = _model(r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, mixer=mixer, routing=routing)
    return replace(spec, tie_word_embeddings=r.flag("tie_embedding", spec.tie_word_embeddings)) if r.has("tie_embedding") else spec


def _granitemoehybrid(r: _Reader, name: str) -> ModelSpec:
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
    attention = _attention(r, d, qkv_bias=r.flag("attention_bias", False))
    if not experts:
        dense = FFNSpec(variant=r.variant("hidden_act", gated=True), d_model=d, d_ff=check_int(r.key("shared_intermediate_size"), shared))
        return _model(r, name, attention=attention, dense=dense, mixer=mixer)
    moe = _moe(
        r,
        d,
        d_ff=r.integer("intermediate_size"),
        experts=experts,
        top_k=r.integer("num_experts_per_tok"),
        normalize=True,
        shared=1 if shared else 0,
        shared_d_ff=shared or None,
    )
    return _model(r, name, attention=attention, moe=moe, moe_layers=_every_layer(r), mixer=mixer)


# Nemotron-H's hybrid_override_pattern letters, and the names its layers_block_type (alias
# layer_types) gives them; mamba and attention are the names before the class renamed them.
_NEMOTRON_H_LETTERS = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
_NEMOTRON_H_LEGACY = {"mamba": "linear_attention", "attention": "full_attention"}


def _nemotron_h_types(r: _Reader) -> list[str]:
    """Each layer's block: layers_block_type when given, else hybrid_override_pattern, else the
    class default; num_hidden_layers is not read (the class takes the list's length)."""
    if r.has("layers_block_type"):
        types = r.get("layers_block_type")
        if not isinstance(types, list) or not types or any(not isinstance(t, str) for t in types):
            why = _("must list each layer's block: linear_attention, full_attention, mlp or moe")
            raise FFNError(r.key("layers_block_type"), types, why)
        types = [_NEMOTRON_H_LEGACY.get(t, t) for t in types]
    elif r.has("hybrid_override_pattern"):
        pattern = r.get("hybrid_override_pattern")
        if not isinstance(pattern, str) or not pattern or set(pattern) - set(_NEMOTRON_H_LETTERS):
            raise FFNError(
                r.key("hybrid_override_pattern"), pattern, _("must be one letter per layer: M (Mamba-2), * (attention), - (MLP), E (MoE)")
            )
        types = [_NEMOTRON_H_LETTERS[c] for c in pattern]
    else:
        types = list(r.defaults["layers_block_type"])
    bad = sorted(set(types) - set(_NEMOTRON_H_LETTERS.values()))
    if bad:
        raise FFNError(r.key("layers_block_type"), bad[0], _("must be linear_attention, full_attention, mlp or moe"))
    if len(types) > MAX_LAYERS:
        raise FFNError(r.key("layers_block_type"), len(types), _("layers: at most {n}").format(n=MAX_LAYERS))
    if not {"linear_attention", "full_attention"} & set(types):
        raise FFNError(r.key("layers_block_type"), types, _("has no Mamba-2 or attention layer to mix tokens"))
    return types


def _legacy(r: _Reader, key: str, old: str) -> Any:
    """A key the class also takes under its old name, the old name first (as NemotronHConfig pops it)."""
    return r.config[old] if r.config.get(old) is not None else r.get(key)


def _legacy_flag(r: _Reader, key: str, old: str) -> bool:
    value = _legacy(r, key, old)
    if not isinstance(value, bool):
        raise FFNError(r.key(old if r.config.get(old) is not None else key), value, "must be true or false")
    return value


def _nemotron_h(r: _Reader, name: str) -> ModelSpec:
    # Nemotron-H: each layer one block, a norm and then one of: NemotronHMamba2Mixer (Mamba-2 of
    # mamba_num_heads × mamba_head_dim, n_groups, ssm_state_size, conv_kernel; conv bias
    # use_conv_bias, projection biases use_bias, not mamba_proj_bias), NemotronHAttention (no
    # biases, whatever attention_bias says; no rotary), NemotronHMLP (up and down, mlp_hidden_act,
    # relu2 by default, mlp_bias), or NemotronHMoE: a sigmoid router over n_routed_experts
    # unbiased up/down experts of moe_intermediate_size, top num_experts_per_tok, beside one
    # shared NemotronHMLP of moe_shared_expert_intermediate_size (0 falls back to
    # intermediate_size, as the class's `or` does; n_shared_experts is not read), mlp_bias on
    # the shared MLP only. e_score_correction_bias is a buffer; transformers builds no MTP layers.
    types = _nemotron_h_types(r)
    if r.config.get("moe_latent_size") is not None and "moe" in types:
        # Experts over a latent narrower than hidden_size: no FFNSpec holds that; transformers' build counts it.
        raise UnknownModelType(r.config, name, r.source, SUPPORTED_MODEL_TYPES)
    d, n = r.integer("hidden_size"), len(types)
    kind = {t: tuple(i for i, x in enumerate(types) if x == t) for t in _NEMOTRON_H_LETTERS.values()}
    mixer = None
    if kind["linear_attention"]:
        mixer = mamba2(
            d,
            heads=r.integer("mamba_num_heads"),
            head_dim=r.integer("mamba_head_dim"),
            groups=check_int(r.key("n_groups"), _legacy(r, "n_groups", "mamba_n_groups"), maximum=MAX_DIM),
            state=r.integer("ssm_state_size"),
            conv_kernel=check_int(r.key("conv_kernel"), _legacy(r, "conv_kernel", "mamba_d_conv"), maximum=MAX_DIM),
            conv_bias=_legacy_flag(r, "use_conv_bias", "mamba_conv_bias"),
            proj_bias=r.flag("use_bias", False),
            layers=kind["linear_attention"],
            chunk=check_int(r.key("chunk_size"), _legacy(r, "chunk_size", "mamba_chunk_size"), maximum=MAX_DIM),
        )
    mlp_bias = r.flag("mlp_bias", False)
    act = r.variant("mlp_hidden_act", gated=False)
    dense = FFNSpec(variant=act, d_model=d, d_ff=r.integer("intermediate_size"), bias=mlp_bias) if kind["mlp"] else None
    moe, extra, routing = None, (), ""
    if kind["moe"]:
        shared = r.integer("moe_shared_expert_intermediate_size", minimum=0) or r.integer("intermediate_size")
        moe = _moe(
            r,
            d,
            d_ff=r.integer("moe_intermediate_size"),
            experts=r.integer("n_routed_experts"),
            top_k=r.integer("num_experts_per_tok"),
            normalize=r.flag("norm_topk_prob", True),
            shared=1,
            shared_d_ff=shared,
            expert_variant=act,
        )
        if mlp_bias:
            extra = tuple(ParamTensor(f"shared_experts.{p}.bias", (w,)) for p, w in (("up_proj", shared), ("down_proj", d)))
        groups = r.integer("n_group")
        top_groups = r.integer("topk_group") if groups > 1 else None
        routing = routing_rules(
            sigmoid=True, bias_corrected=True, groups=groups, top_groups=top_groups, scale=r.number("routed_scaling_factor", 1.0)
        )
    # NemotronHForCausalLM ties no weights (its _tied_weights_keys is empty): the head is its own
    # matrix whatever tie_word_embeddings says.
    spec = _model(
        r,
        name,
        attention=_attention(r, d),
        dense=dense,
        moe=moe,
        moe_layers=kind["moe"],
        norms_per_layer=1,
        n_layers=n,
        mixer=mixer,
        no_ffn_layers=kind["linear_attention"] + kind["full_attention"],
        no_mixer_layers=kind["mlp"] + kind["moe"],
        moe_extra=extra,
        routing=routing,
    )
    return replace(spec, tie_word_embeddings=False)


# Gemma3nTextConfig's intermediate_size, which it repeats for every layer.
GEMMA3N_WIDTH = 16384


def _gemma3n_widths(r: _Reader, layers: int) -> tuple[int, ...]:
    """intermediate_size: one width, or one a layer (the class repeats a single one)."""
    value = r.get("intermediate_size", GEMMA3N_WIDTH)
    widths = value if isinstance(value, list) else [value] * layers
    if len(widths) != layers:
        why = _("must list one width for each of {layers} layers, or be one width").format(layers=layers)
        raise FFNError(r.key("intermediate_size"), value, why)
    return tuple(check_int(r.key("intermediate_size"), w, maximum=MAX_DIM) for w in widths)


def _gemma3n_kv_shared(r: _Reader, layers: int) -> tuple[int, ...]:
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


def _gemma3n_sparsity(r: _Reader, layers: int) -> tuple[tuple[int, ...], str]:
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


def _gemma3n_extras(r: _Reader, d: int, layers: int) -> tuple[ExtraPart, ...]:
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
        ExtraPart(N_("per-layer embeddings"), "embedding", f"({vocab:,}, {layers} × {p:,})", table),
        ExtraPart(
            N_("per-layer input projection"),
            "other",
            f"({layers} × {p:,}, {d:,})",
            (ParamTensor("per_layer_model_projection.weight", (layers * p, d)),),
            flops=2 * layers * p * d,
        ),
        ExtraPart(N_("per-layer input norm"), "norm", f"RMSNorm({p:,})", (ParamTensor("per_layer_projection_norm.weight", (p,)),)),
    ]
    if n > 1:  # n − 1 projections into the copies before the layers, n − 1 out of them after
        ways = (ParamTensor("altup_projections.*.weight", (d, d)), ParamTensor("altup_unembed_projections.*.weight", (d, d)))
        both = Message(N_("({d}, {d}) into the copies and out of them"), d=f"{d:,}")
        extras.append(ExtraPart(N_("AltUp projections"), "other", both, ways, flops=4 * d * d, copies=n - 1))
    altup_detail = Message(N_("{n} copies of the hidden state: router ({n}, {d}) run twice, coefficients"), n=n, d=f"{d:,}")
    laurel_detail = Message(N_("low rank {rank}: ({rank}, {d}), ({d}, {rank})"), rank=rank, d=f"{d:,}")
    altup_flops = 2 * 2 * n * d + 2 * n * n * n + 2 * n * n + 2 * d * n * n
    extras += [
        ExtraPart(N_("AltUp"), "other", altup_detail, altup, per_layer=True, flops=altup_flops),
        ExtraPart(N_("Laurel"), "other", laurel_detail, laurel, per_layer=True, flops=4 * rank * d),
        ExtraPart(N_("per-layer input gate"), "other", f"({p:,}, {d:,}), ({d:,}, {p:,})", gate, per_layer=True, flops=4 * p * d),
    ]
    return tuple(extras)


def _gemma3n_text(r: _Reader, name: str) -> ModelSpec:
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
    attention = _attention(r, d, qkv_bias=bias, qk_norm="head")
    widths = _gemma3n_widths(r, layers)
    dense = FFNSpec(variant=r.variant("hidden_activation", gated=True), d_model=d, d_ff=widths[0])
    sparse, note = _gemma3n_sparsity(r, layers)
    return _model(
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


# --- multimodal wrappers: the text model in text_config, a vision tower beside it ------------


def _wrapped(r: _Reader, name: str, text_type: str, tower: Callable[[_Reader, int], VisionTower]) -> ModelSpec:
    text = r.nested("text_config", text_type, TEXT_DEFAULTS.get(r.model_type))
    if text.model_type not in _TEXT_READERS:
        raise FFNError(
            text.key("model_type"), text.model_type, _("supported: {text_readers}").format(text_readers=", ".join(_TEXT_READERS))
        )
    spec = _TEXT_READERS[text.model_type](_Reader(text.config, text.model_type, text.source, text.prefix), name)
    vision = r.nested("vision_config", "", VISION_DEFAULTS.get(r.model_type))
    tie = r.flag("tie_word_embeddings", DEFAULTS[r.model_type]["tie_word_embeddings"])
    tower_spec = tower(_Reader(vision.config, vision.model_type, vision.source, vision.prefix), spec.d_model)
    return replace(spec, model_type=r.model_type, tie_word_embeddings=tie, vision=tower_spec, source=r.source)


def _gemma3(r: _Reader, name: str) -> ModelSpec:
    return _wrapped(r, name, "gemma3_text", siglip_tower)


def _llama4(r: _Reader, name: str) -> ModelSpec:
    return _wrapped(r, name, "llama4_text", llama4_tower)


def _mistral3(r: _Reader, name: str) -> ModelSpec:
    layer = r.get("vision_feature_layer", -1)
    feature_layers = len(layer) if isinstance(layer, list) else 1
    merge, bias = r.integer("spatial_merge_size", 2), r.flag("multimodal_projector_bias", False)
    return _wrapped(r, name, "mistral", lambda v, d: pixtral_tower(v, d, merge=merge, feature_layers=feature_layers, projector_bias=bias))


_TEXT_READERS: dict[str, Callable[[_Reader, str], ModelSpec]] = {
    "llama": _llama,
    "mistral": _mistral,
    "ministral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "olmo": _olmo,
    "olmo2": _olmo2,
    "olmo3": _olmo2,
    "granite": _granite,
    "granitemoe": _granitemoe,
    "granitemoeshared": _granitemoeshared,
    "phi": _phi,
    "phi3": _phi3,
    "phimoe": _phimoe,
    "gpt_neox": _gpt_neox,
    "falcon": _falcon,
    "starcoder2": _starcoder2,
    "deepseek": _deepseek,
    "deepseek_v2": _deepseek_v3,
    "deepseek_v3": _deepseek_v3,
    "gpt_oss": _gpt_oss,
    "llama4_text": _llama4_text,
    "gpt2": _gpt2,
    "bert": _bert,
    "roberta": _bert,
    "xlm-roberta": _bert,
    "smollm3": _smollm3,
    "seed_oss": _seed_oss,
    "exaone4": _exaone4,
    "glm4": _glm4,
    "apertus": _apertus,
    "cohere2": _cohere2,
    "glm4_moe": _glm4_moe,
    "dots1": _dots1,
    "ernie4_5_moe": _ernie4_5_moe,
    "hunyuan_v1_moe": _hunyuan_v1_moe,
    "minimax_m2": _minimax_m2,
    "qwen3_next": _qwen3_next,
    "lfm2": _lfm2,
    "lfm2_moe": _lfm2_moe,
    "granitemoehybrid": _granitemoehybrid,
    "nemotron_h": _nemotron_h,
    "gemma3n_text": _gemma3n_text,
}
_READERS: dict[str, Callable[[_Reader, str], ModelSpec]] = {**_TEXT_READERS, "gemma3": _gemma3, "llama4": _llama4, "mistral3": _mistral3}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(_READERS)


def model_spec_from_config(config: Mapping[str, Any], *, name: str | None = None, source: str = "config") -> ModelSpec:
    """The ModelSpec of a Hugging Face config dict; `name` defaults to its _name_or_path."""
    model_type = config.get("model_type")
    if model_type is None:
        raise FFNError(
            "config",
            source,
            _("has no 'model_type'; supported: {supported_model_types}").format(supported_model_types=", ".join(SUPPORTED_MODEL_TYPES)),
        )
    label = name or config.get("_name_or_path") or source
    if not isinstance(model_type, str) or model_type not in _READERS:
        raise UnknownModelType(config, str(label), source, SUPPORTED_MODEL_TYPES)
    return _READERS[model_type](_Reader(config, model_type, source), str(label))
