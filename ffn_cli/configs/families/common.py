"""The pieces every family's reader is built from: a ConfigReader that knows the family's
defaults and activation names, and the attention, FFN, MoE and decoder a reader assembles.

A key a config leaves out takes its config class's default (ffn_cli.configs.defaults), so a
config that omits a key counts as transformers builds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ffn_cli.attention import AnyAttention, AttentionSpec, QKNorm
from ffn_cli.configs.defaults import ALIASES, DEFAULTS
from ffn_cli.configs.reader import REQUIRED, ConfigReader
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.spec import ModelSpec, NormKind
from ffn_cli.spec import FFNSpec

__all__ = [
    "FamilyReader",
    "Unreadable",
    "attention_spec",
    "decoder_spec",
    "dense_spec",
    "every_layer",
    "heads_of",
    "llama_like",
    "moe_spec",
    "sparse_step_layers",
]

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


class FamilyReader(ConfigReader):
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

    def variant(self, *keys: str, gated: bool, built: str | None = None) -> str:
        """The registry variant for the config's activation; any string is accepted for counting.
        `built`: the activation the built module runs (CTRL's nn.ReLU), where the config names none."""
        name = next((self.config[k] for k in keys if self.config.get(k) is not None), built)
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


def heads_of(r: FamilyReader, d: int, *, head_dim_key: bool = True) -> tuple[int, int, int | None]:
    heads = r.integer("num_attention_heads")
    kv = r.opt_integer("num_key_value_heads") or heads
    head_dim = r.opt_integer("head_dim") if head_dim_key else None
    if head_dim is None and d % heads:
        hint = _(", or the config must give head_dim") if head_dim_key else ""
        raise FFNError(r.key("num_attention_heads"), heads, _("must divide hidden_size ({d}){hint}").format(d=d, hint=hint))
    return heads, kv, head_dim


def attention_spec(
    r: FamilyReader,
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
    heads, kv, head_dim = heads_of(r, d, head_dim_key=head_dim_key)
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


def dense_spec(
    r: FamilyReader,
    d: int,
    *,
    gated: bool = True,
    bias: bool = False,
    fused: bool = False,
    d_ff_key: str = "intermediate_size",
    act_keys: tuple[str, ...] = ("hidden_act",),
) -> FFNSpec:
    return FFNSpec(variant=r.variant(*act_keys, gated=gated), d_model=d, d_ff=r.integer(d_ff_key), bias=bias, fused_gate_up=fused)


def moe_spec(
    r: FamilyReader,
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


def decoder_spec(
    r: FamilyReader,
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


def llama_like(
    r: FamilyReader,
    name: str,
    *,
    qkv_bias: bool = False,
    o_bias: bool | None = None,
    mlp_bias: bool = False,
    fused: bool = False,
    **kw: Any,
) -> ModelSpec:
    d = r.integer("hidden_size")
    attention = attention_spec(r, d, qkv_bias=qkv_bias, o_bias=o_bias, qk_norm=kw.pop("qk_norm", "none"))
    dense = dense_spec(r, d, bias=mlp_bias, fused=fused, act_keys=kw.pop("act_keys", ("hidden_act",)))
    return decoder_spec(r, name, attention=attention, dense=dense, fused_qkv=fused, **kw)


def every_layer(r: FamilyReader) -> tuple[int, ...]:
    return tuple(range(r.integer("num_hidden_layers")))


def sparse_step_layers(r: FamilyReader, experts: int) -> tuple[int, ...]:
    """Qwen2/3-MoE: MoE where (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers."""
    step, mlp_only = r.integer("decoder_sparse_step"), set(r.layer_list("mlp_only_layers"))
    return tuple(i for i in every_layer(r) if i not in mlp_only and experts > 0 and (i + 1) % step == 0)


class Unreadable(Exception):
    """A config of a known family in a shape no FFNSpec holds: the registry answers it as a
    model_type no reader knows, so `ffn params` counts it by building it instead."""

    def __init__(self, config: Mapping[str, Any], name: str, source: str) -> None:
        super().__init__(name)
        self.config, self.name, self.source = config, name, source
