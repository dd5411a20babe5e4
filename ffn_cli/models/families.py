"""Hugging Face config.json → ModelSpec, one reader per model_type.

Each reader encodes its family's modelling code (transformers' modeling_<type>.py, DeepSeek's
modeling_deepseek.py): which projections carry biases, head_dim, whether embeddings are tied
by default, norms with or without affine weights, fused projections, which layers are MoE.
Defaults are the family's config-class defaults, so a config that omits a key counts as
Hugging Face would build it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ffn_cli.attention import AttentionSpec
from ffn_cli.errors import FFNError
from ffn_cli.models.spec import ModelSpec, NormKind
from ffn_cli.spec import MAX_DIM, FFNSpec, check_int

__all__ = ["SUPPORTED_MODEL_TYPES", "UnknownModelType", "model_spec_from_config"]

_REQUIRED = object()

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
}
# The registry variant a gated (GLU) or a plain two-layer MLP uses for an activation.
_GATED = {"silu": "swiglu", "gelu": "geglu", "gelu_tanh": "geglu", "relu": "reglu", "sigmoid": "glu"}
_DENSE = {"silu": "silu", "gelu": "gelu", "gelu_tanh": "gelu_tanh", "relu": "relu", "relu2": "relu2"}


class _Reader:
    """Typed access to one config dict; every failure is an FFNError naming the key."""

    def __init__(self, config: Mapping[str, Any], model_type: str, source: str) -> None:
        self.config, self.model_type, self.source = config, model_type, source

    def _get(self, key: str, default: Any) -> Any:
        value = self.config.get(key)
        if value is None:
            if default is _REQUIRED:
                raise FFNError("config", self.source, f"missing key {key!r}, which model_type {self.model_type!r} needs")
            return default
        return value

    def integer(self, key: str, default: Any = _REQUIRED, *, minimum: int = 1) -> int:
        return check_int(key, self._get(key, default), minimum=minimum, maximum=MAX_DIM)

    def opt_integer(self, key: str, *, minimum: int = 1) -> int | None:
        value = self.config.get(key)
        return None if value is None else check_int(key, value, minimum=minimum, maximum=MAX_DIM)

    def flag(self, key: str, default: bool) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise FFNError(key, value, "must be true or false")
        return value

    def layer_list(self, key: str) -> tuple[int, ...]:
        value = self._get(key, [])
        if not isinstance(value, list):
            raise FFNError(key, value, "must be a list of layer indices")
        return tuple(check_int(key, v, minimum=0, maximum=MAX_DIM) for v in value)

    def activation(self, *keys: str, default: str) -> str:
        name = next((self.config[k] for k in keys if self.config.get(k) is not None), default)
        if not isinstance(name, str) or name not in _ACTIVATIONS:
            raise FFNError(keys[0], name, "supported: " + ", ".join(_ACTIVATIONS))
        return _ACTIVATIONS[name]


def _gated(act: str, key: str) -> str:
    if act not in _GATED:
        raise FFNError(key, act, "has no gated variant; supported: " + ", ".join(_GATED))
    return _GATED[act]


def _dense(act: str, key: str) -> str:
    if act not in _DENSE:
        raise FFNError(key, act, "has no dense variant; supported: " + ", ".join(_DENSE))
    return _DENSE[act]


def _attention(r: _Reader, d: int, *, qkv_bias: bool, o_bias: bool, head_dim_default: int | None = None) -> AttentionSpec:
    heads = r.integer("num_attention_heads")
    return AttentionSpec(
        d_model=d,
        n_heads=heads,
        n_kv_heads=r.opt_integer("num_key_value_heads") or heads,
        head_dim=r.opt_integer("head_dim") or head_dim_default,
        qkv_bias=qkv_bias,
        o_bias=o_bias,
    )


def _decoder(
    r: _Reader,
    name: str,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    mlp_bias: bool = False,
    tie_default: bool = False,
    head_dim_default: int | None = None,
    norm: NormKind = "rmsnorm",
    fused: bool = False,
    act_keys: tuple[str, ...] = ("hidden_act",),
    act_default: str = "silu",
    moe: FFNSpec | None = None,
    moe_layers: tuple[int, ...] = (),
) -> ModelSpec:
    """A LLaMA-shaped decoder: token embeddings, pre-norm layers (2 norms each), final norm, LM head."""
    d, layers = r.integer("hidden_size"), r.integer("num_hidden_layers")
    act = r.activation(*act_keys, default=act_default)
    dense = None
    if len(set(moe_layers)) < layers:
        dense = FFNSpec(
            variant=_gated(act, act_keys[0]), d_model=d, d_ff=r.integer("intermediate_size"), bias=mlp_bias, fused_gate_up=fused
        )
    return ModelSpec(
        name=name,
        model_type=r.model_type,
        d_model=d,
        n_layers=layers,
        vocab_size=r.integer("vocab_size"),
        attention=_attention(r, d, qkv_bias=qkv_bias, o_bias=o_bias, head_dim_default=head_dim_default),
        dense_ffn=dense,
        moe_ffn=moe,
        moe_layers=moe_layers,
        norm=norm,
        tie_word_embeddings=r.flag("tie_word_embeddings", tie_default),
        fused_qkv=fused,
        source=r.source,
    )


def _moe(r: _Reader, *, d_ff: int, experts: int, top_k: int, normalize: bool, shared: int = 0, **extra: Any) -> FFNSpec:
    act = r.activation("hidden_act", default="silu")
    return FFNSpec(
        variant="moe",
        d_model=r.integer("hidden_size"),
        d_ff=d_ff,
        experts=experts,
        top_k=top_k,
        expert_variant=_gated(act, "hidden_act"),
        shared_experts=shared,
        normalize_top_k=normalize,
        bias=False,
        **extra,
    )


def _llama(r: _Reader, name: str) -> ModelSpec:
    bias = r.flag("attention_bias", False)
    return _decoder(r, name, qkv_bias=bias, o_bias=bias, mlp_bias=r.flag("mlp_bias", False))


def _mistral(r: _Reader, name: str) -> ModelSpec:
    return _decoder(r, name)  # no biases anywhere; GQA and head_dim come from the config


def _mixtral(r: _Reader, name: str) -> ModelSpec:
    # Every layer's block_sparse_moe: router Linear(d, E, bias=False) and E SwiGLU experts (w1, w3, w2).
    moe = _moe(
        r,
        d_ff=r.integer("intermediate_size"),
        experts=r.integer("num_local_experts", 8),
        top_k=r.integer("num_experts_per_tok", 2),
        normalize=True,
    )
    return _decoder(r, name, moe=moe, moe_layers=tuple(range(r.integer("num_hidden_layers"))))


def _qwen2(r: _Reader, name: str) -> ModelSpec:
    return _decoder(r, name, qkv_bias=True, o_bias=False)  # Qwen2Attention: q, k, v biased, o not


def _qwen2_moe(r: _Reader, name: str) -> ModelSpec:
    layers, experts = r.integer("num_hidden_layers"), r.integer("num_experts", 60, minimum=0)
    step, mlp_only = r.integer("decoder_sparse_step", 1), set(r.layer_list("mlp_only_layers"))
    moe_layers = tuple(i for i in range(layers) if i not in mlp_only and experts > 0 and (i + 1) % step == 0)
    moe = None
    if moe_layers:
        # One shared expert of its own width, scaled by sigmoid(shared_expert_gate(x)).
        shared = r.integer("shared_expert_intermediate_size", 5632, minimum=0)
        moe = _moe(
            r,
            d_ff=r.integer("moe_intermediate_size", 1408),
            experts=experts,
            top_k=r.integer("num_experts_per_tok", 4),
            normalize=r.flag("norm_topk_prob", False),
            shared=1 if shared else 0,
            shared_d_ff=shared or None,
            shared_expert_gate=bool(shared),
        )
    return _decoder(r, name, qkv_bias=r.flag("qkv_bias", True), o_bias=False, moe=moe, moe_layers=moe_layers)


def _gemma(r: _Reader, name: str) -> ModelSpec:
    # Tied embeddings and head_dim 256 by default; GemmaRMSNorm keeps one weight (applied as 1 + w).
    bias = r.flag("attention_bias", False)
    return _decoder(
        r,
        name,
        qkv_bias=bias,
        o_bias=bias,
        tie_default=True,
        head_dim_default=256,
        act_keys=("hidden_activation", "hidden_act"),
        act_default="gelu_pytorch_tanh",
    )


def _phi3(r: _Reader, name: str) -> ModelSpec:
    return _decoder(r, name, fused=True)  # one qkv_proj and one gate_up_proj (gate first), no biases


def _deepseek(r: _Reader, name: str) -> ModelSpec:
    layers, routed = r.integer("num_hidden_layers"), r.opt_integer("n_routed_experts")
    moe_layers: tuple[int, ...] = ()
    moe = None
    if routed:
        first, every = r.integer("first_k_dense_replace", 0, minimum=0), r.integer("moe_layer_freq", 1)
        moe_layers = tuple(i for i in range(layers) if i >= first and i % every == 0)
        # Shared experts are one MLP of width moe_intermediate_size × n_shared_experts, ungated.
        moe = _moe(
            r,
            d_ff=r.integer("moe_intermediate_size"),
            experts=routed,
            top_k=r.integer("num_experts_per_tok"),
            normalize=r.flag("norm_topk_prob", False),
            shared=r.opt_integer("n_shared_experts", minimum=0) or 0,
        )
    bias = r.flag("attention_bias", False)
    return _decoder(r, name, qkv_bias=bias, o_bias=bias, moe=moe, moe_layers=moe_layers)


def _olmo(r: _Reader, name: str) -> ModelSpec:
    bias = r.flag("attention_bias", False)
    return _decoder(r, name, qkv_bias=bias, o_bias=bias, norm="layernorm_no_affine")  # OLMo-1: LayerNorm without weight or bias


def _gpt2(r: _Reader, name: str) -> ModelSpec:
    # Conv1D c_attn (d → 3d) and c_proj with biases, learned positions, LayerNorms, ln_f, head tied to wte.
    d = r.integer("n_embd")
    act = r.activation("activation_function", default="gelu_new")
    return ModelSpec(
        name=name,
        model_type="gpt2",
        d_model=d,
        n_layers=r.integer("n_layer"),
        vocab_size=r.integer("vocab_size"),
        attention=AttentionSpec(d_model=d, n_heads=r.integer("n_head"), qkv_bias=True, o_bias=True),
        dense_ffn=FFNSpec(variant=_dense(act, "activation_function"), d_model=d, d_ff=r.opt_integer("n_inner") or 4 * d, bias=True),
        max_positions=r.integer("n_positions"),
        norm="layernorm",
        tie_word_embeddings=r.flag("tie_word_embeddings", True),
        fused_qkv=True,
        source=r.source,
    )


def _bert(r: _Reader, name: str) -> ModelSpec:
    # BertModel: word + position + token-type embeddings and their LayerNorm, post-norm layers, pooler.
    d = r.integer("hidden_size")
    act = r.activation("hidden_act", default="gelu")
    return ModelSpec(
        name=name,
        model_type="bert",
        d_model=d,
        n_layers=r.integer("num_hidden_layers"),
        vocab_size=r.integer("vocab_size"),
        attention=AttentionSpec(d_model=d, n_heads=r.integer("num_attention_heads"), qkv_bias=True, o_bias=True),
        dense_ffn=FFNSpec(variant=_dense(act, "hidden_act"), d_model=d, d_ff=r.integer("intermediate_size"), bias=True),
        max_positions=r.integer("max_position_embeddings"),
        type_vocab_size=r.integer("type_vocab_size", 2, minimum=0),
        norm="layernorm",
        final_norm=False,
        embedding_norm=True,
        lm_head=False,
        pooler=True,
        source=r.source,
    )


_READERS: dict[str, Callable[[_Reader, str], ModelSpec]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "gemma": _gemma,
    "phi3": _phi3,
    "gpt2": _gpt2,
    "bert": _bert,
    "deepseek": _deepseek,
    "olmo": _olmo,
}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(_READERS)


class UnknownModelType(FFNError):
    """No reader knows this model_type. It carries the config, so `ffn params` can count it by
    building it with transformers instead (ffn_cli.models.fallback)."""

    def __init__(self, config: Mapping[str, Any], name: str, source: str) -> None:
        super().__init__("model_type", config.get("model_type"), "supported: " + ", ".join(SUPPORTED_MODEL_TYPES))
        self.config, self.name, self.source = config, name, source


def model_spec_from_config(config: Mapping[str, Any], *, name: str | None = None, source: str = "config") -> ModelSpec:
    """The ModelSpec of a Hugging Face config dict; `name` defaults to its _name_or_path."""
    model_type = config.get("model_type")
    if model_type is None:
        raise FFNError("config", source, "has no 'model_type'; supported: " + ", ".join(SUPPORTED_MODEL_TYPES))
    label = name or config.get("_name_or_path") or source
    if not isinstance(model_type, str) or model_type not in _READERS:
        raise UnknownModelType(config, str(label), source)
    return _READERS[model_type](_Reader(config, model_type, source), str(label))
