"""Nemotron-H: each layer one block (Mamba-2, attention, MLP or MoE), as its pattern or its list
of block types says.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ffn_cli.accounting import ParamTensor
from ffn_cli.configs.families.common import FamilyReader, attention_spec, decoder_spec, moe_spec
from ffn_cli.configs.families.family import Family
from ffn_cli.configs.routing_words import routing_rules
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.mixers import STATE_DTYPE_BYTES, mamba2
from ffn_cli.models.spec import MAX_LAYERS, ModelSpec
from ffn_cli.spec import MAX_DIM, FFNSpec, check_int
from ffn_cli.variants.moe import LATENT_DOWN, LATENT_UP

__all__ = ["NEMOTRON_H"]

# Nemotron-H's hybrid_override_pattern letters, and the names its layers_block_type (alias
# layer_types) gives them; mamba and attention are the names before the class renamed them.
_NEMOTRON_H_LETTERS = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
_NEMOTRON_H_LEGACY = {"mamba": "linear_attention", "attention": "full_attention"}


def _nemotron_h_types(r: FamilyReader) -> list[str]:
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


def _legacy(r: FamilyReader, key: str, old: str) -> Any:
    """A key the class also takes under its old name, the old name first (as NemotronHConfig pops it)."""
    return r.config[old] if r.config.get(old) is not None else r.get(key)


def _legacy_flag(r: FamilyReader, key: str, old: str) -> bool:
    value = _legacy(r, key, old)
    if not isinstance(value, bool):
        raise FFNError(r.key(old if r.config.get(old) is not None else key), value, "must be true or false")
    return value


def _ssm_state_bytes(r: FamilyReader) -> int | None:
    """The SSM state's element size where the file names its dtype (vLLM keeps the state in it;
    Nemotron 3 asks for float32), else None: the cache dtype. The class's own default is not
    read: a config that names no dtype is cached as the rest is."""
    value = r.config.get("mamba_ssm_cache_dtype")
    if value is None:
        return None
    if value not in STATE_DTYPE_BYTES:
        raise FFNError(r.key("mamba_ssm_cache_dtype"), value, _("must be float32, bfloat16, float16 or auto"))
    return STATE_DTYPE_BYTES[value]


def _nemotron_h(r: FamilyReader, name: str) -> ModelSpec:
    # Nemotron-H: each layer one block, a norm and then one of: NemotronHMamba2Mixer (Mamba-2 of
    # mamba_num_heads × mamba_head_dim, n_groups, ssm_state_size, conv_kernel; conv bias
    # use_conv_bias, projection biases use_bias, not mamba_proj_bias), NemotronHAttention (no
    # biases, whatever attention_bias says; no rotary), NemotronHMLP (up and down, mlp_hidden_act,
    # relu2 by default, mlp_bias), or NemotronHMoE: a sigmoid router over n_routed_experts
    # unbiased up/down experts of moe_intermediate_size, top num_experts_per_tok, beside one
    # shared NemotronHMLP of moe_shared_expert_intermediate_size (0 falls back to
    # intermediate_size, as the class's `or` does; n_shared_experts is not read), mlp_bias on
    # the shared MLP only. With moe_latent_size (Nemotron 3 Super and Ultra) the routed experts
    # read and write that latent, through fc1_latent_proj and fc2_latent_proj (mlp_bias theirs
    # too). e_score_correction_bias is a buffer (router_score_bias: in the checkpoint, not a
    # parameter); transformers builds no MTP layers.
    types = _nemotron_h_types(r)
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
            state_dtype_bytes=_ssm_state_bytes(r),
        )
    mlp_bias = r.flag("mlp_bias", False)
    act = r.variant("mlp_hidden_act", gated=False)
    dense = FFNSpec(variant=act, d_model=d, d_ff=r.integer("intermediate_size"), bias=mlp_bias) if kind["mlp"] else None
    moe, routing = None, ""
    extra: tuple[ParamTensor, ...] = ()
    if kind["moe"]:
        shared = r.integer("moe_shared_expert_intermediate_size", minimum=0) or r.integer("intermediate_size")
        moe = moe_spec(
            r,
            d,
            d_ff=r.integer("moe_intermediate_size"),
            experts=r.integer("n_routed_experts"),
            top_k=r.integer("num_experts_per_tok"),
            normalize=r.flag("norm_topk_prob", True),
            shared=1,
            shared_d_ff=shared,
            expert_variant=act,
            latent=r.opt_integer("moe_latent_size"),
        )
        if mlp_bias:
            extra = tuple(ParamTensor(f"shared_experts.{p}.bias", (w,)) for p, w in (("up_proj", shared), ("down_proj", d)))
            if moe.latent:
                extra += (ParamTensor(f"{LATENT_DOWN}.bias", (moe.latent,)), ParamTensor(f"{LATENT_UP}.bias", (d,)))
        groups = r.integer("n_group")
        top_groups = r.integer("topk_group") if groups > 1 else None
        routing = routing_rules(
            sigmoid=True, bias_corrected=True, groups=groups, top_groups=top_groups, scale=r.number("routed_scaling_factor", 1.0)
        )
    # NemotronHForCausalLM ties no weights (its _tied_weights_keys is empty): the head is its own
    # matrix whatever tie_word_embeddings says.
    spec = decoder_spec(
        r,
        name,
        attention=attention_spec(r, d),
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
        router_score_bias=moe is not None,
    )
    return replace(spec, tie_word_embeddings=False)


NEMOTRON_H = Family(("nemotron_h",), _nemotron_h)
