"""What a checkpoint ships beside the model transformers builds from its config, counted in its
bytes: the multi-token-prediction (MTP) layers a config declares, the routers' score biases and
DeepSeek-V4's hash-routing tables. Pure Python.

An MTP layer (`num_nextn_predict_layers`, or `num_mtp_layers`, transformers' name: DeepSeek-V3's layer 61, GLM-4.5's layer 46, GLM-5's
and DeepSeek-V3.2's with their indexer), as the checkpoints store it and vLLM's deepseek_mtp /
glm4_moe_mtp load it: one more decoder layer of the last layer's kind (attention, its MoE FFN,
its norms), `enorm` and `hnorm` (norms of the
embedding and of the hidden state), `eh_proj` (2·d → d, a linear, stored as the layers' are),
`shared_head` (a norm and a copy of the LM head) and a copy of the embeddings. transformers
builds none of it, so `ffn params` counts the model without it; serving may drop it (`--no-mtp`).

DeepSeek-V4's MTP block is another shape (DeepSeek's inference/model.py `MTPBlock`, stored as
`mtp.{i}.*` and loaded by vLLM's DeepSeekV4MTP): a decoder layer past the hash-routed ones whose
attention is the window alone (compress ratio 0: the layers' attention without a compressor),
its MoE FFN, its two norms and the hyper-connections' mixes every layer holds; `e_proj` and
`h_proj` (d → d each, where V3 has one 2·d → d `eh_proj`), `enorm`, `hnorm` and `norm`, and an
`hc_head` of its own, shaped as the model's. The embeddings and the head are the model's, shared
and not stored again.

Qwen3-Next's and Qwen3.5's MTP layers (`mtp_num_hidden_layers`, stored as `mtp.*` and loaded by
vLLM's qwen3_next_mtp and qwen3_5_mtp) are a decoder layer of the full-attention kind, with its
MoE (or dense) FFN and norms, beside `fc` (2·d → d, no bias) and three norms (the embedding's,
the hidden state's, and one after the layer); the embeddings and head are the model's.

Many families' routers choose experts on scores plus a bias, one float32 per expert of the
router's pool in every MoE layer (`e_score_correction_bias`: DeepSeek-V3's under noaux_tc
routing, Kimi K2's, GLM-4.5's to GLM-5's, dots.llm1's, MiniMax-M2's, Nemotron 3's, LongCat-Flash's
over its zero experts too, and more; LFM2-MoE's `expert_bias`): a buffer to transformers, not a
parameter, but a tensor in the checkpoint (DeepSeek's inference/model.py keeps the Gate's bias in
float32), and in each MTP layer of a MoE kind. The spec says which models hold one
(ModelSpec.router_score_bias: a family's reader, or the buffer found in transformers' own MoE
layer); a bias that is a parameter (Ernie 4.5's) is in the parameter table, not here. DeepSeek-V4's
hash-routed layers hold none: they route by a table, token id → experts (`tid2eid`, int32), which
the checkpoint ships and transformers keeps as a buffer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.costs.weights import WeightTensor
from ffn_cli.models.layout import PlacedTensor, attention_tensors, extra_tensors, ffn_tensors
from ffn_cli.models.spec import ModelSpec

__all__ = [
    "FC_MTP_MODEL_TYPES",
    "HC_MTP_MODEL_TYPES",
    "MTP_KEYS",
    "MTP_MODEL_TYPES",
    "UNSHIPPED_MTP_MODEL_TYPES",
    "mtp_key",
    "mtp_layers",
    "shipped_tensors",
    "unshipped_mtp_modules",
    "unsized_mtp_layers",
]

# The families whose checkpoints hold their MTP layers in DeepSeek-V3's shape (vLLM's deepseek_mtp
# and glm4_moe_mtp load them): DeepSeek-V3 and V3.2, GLM-4.5 to 4.7, GLM-4.7-Flash (glm4_moe_lite), GLM-5.
MTP_MODEL_TYPES = frozenset({"deepseek_v3", "deepseek_v32", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa"})
# … and in DeepSeek-V4's, beside the hyper-connections (vLLM's DeepSeekV4MTP).
HC_MTP_MODEL_TYPES = frozenset({"deepseek_v4"})
# … and in Qwen3-Next's (vLLM's qwen3_next_mtp and qwen3_5_mtp load them): Qwen3-Next, Qwen3.5 and Qwen3.5-MoE.
FC_MTP_MODEL_TYPES = frozenset({"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"})


# … and whose checkpoints ship none of the MTP modules their configs declare: MiniMax-M2's to M2.7's.
UNSHIPPED_MTP_MODEL_TYPES = frozenset({"minimax_m2"})


# The keys a config.json declares its MTP layers by: DeepSeek's and GLM's, transformers' own name
# for them (DeepSeek-V3's, GLM-4.5's, Inkling's, Ernie 4.5's), Qwen3-Next's and Qwen3.5's.
# MiniMax's num_mtp_modules last: its M2 checkpoints declare modules they do not ship (below).
MTP_KEYS = ("num_nextn_predict_layers", "num_mtp_layers", "mtp_num_hidden_layers", "num_mtp_modules")


def mtp_key(config: Mapping[str, Any]) -> tuple[str, int] | None:
    """The key the file as given declares its MTP layers by, and how many (a multimodal file's
    text_config's too); None where it declares none."""
    nested = config.get("text_config")
    for part in (config, nested if isinstance(nested, Mapping) else {}):
        for key in MTP_KEYS:
            n = part.get(key)
            if key == "num_mtp_modules" and unshipped_mtp_modules(config):
                continue
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                return key, n
    return None


def unshipped_mtp_modules(config: Mapping[str, Any]) -> int:
    """The MTP modules a MiniMax config declares (use_mtp, num_mtp_modules) whose weights its
    checkpoints do not ship (M2, M2.5 and M2.7 store layers 0–61 alone: MiniMax-AI/MiniMax-M2.5#8,
    MiniMax-AI/MiniMax-M2.7#16): nothing to count, said so."""
    nested = config.get("text_config")
    for part in (config, nested if isinstance(nested, Mapping) else {}):
        n = part.get("num_mtp_modules")
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            continue
        if part.get("use_mtp") is True and part.get("model_type") in UNSHIPPED_MTP_MODEL_TYPES:
            return n
    return 0


def _declared(config: Mapping[str, Any]) -> int:
    found = mtp_key(config)
    return found[1] if found is not None else 0


def _sized(spec: ModelSpec) -> bool:
    """Whether ffn knows the shape of the family's MTP layers (DeepSeek-V4's needs its hc_head;
    Qwen3-Next's is a full-attention layer, the kind its last layer is)."""
    if spec.model_type in FC_MTP_MODEL_TYPES:
        return spec.mixer_label(spec.n_layers - 1) == "attention"
    return spec.model_type in MTP_MODEL_TYPES or (spec.model_type in HC_MTP_MODEL_TYPES and bool(_hc_head(spec)))


def mtp_layers(spec: ModelSpec, config: Mapping[str, Any]) -> int:
    """The MTP layers the config declares (0 for a family whose checkpoints ffn does not know to hold them)."""
    return _declared(config) if _sized(spec) else 0


def unsized_mtp_layers(spec: ModelSpec, config: Mapping[str, Any]) -> int:
    """The MTP layers a config declares for a family whose checkpoints' MTP shape ffn does not
    know: named as left out, never counted as another shape."""
    return 0 if _sized(spec) else _declared(config)


def _layer(spec: ModelSpec, count: int) -> list[WeightTensor]:
    """`count` decoder layers of the model's last layer's kind: its attention and FFN blocks as
    the layout places them, and its norms."""
    last = spec.n_layers - 1
    ffn = spec.ffn_of(last)
    tensors = (*attention_tensors(spec, (last,)), *(ffn_tensors(spec, ffn, (last,)) if ffn is not None else ()))
    # a KV head's projections and MLA's down projections held per GPU as the layers' are
    out = [WeightTensor(t.role, t.shape, count * t.copies, "mtp", kv_heads=t.kv_heads, whole=t.whole) for t in tensors]
    out.append(WeightTensor("vector", (spec.norm_params,), spec.norms_per_layer * count, "mtp"))
    return out


def _mtp(spec: ModelSpec, count: int) -> list[WeightTensor]:
    d, v = spec.d_model, spec.vocab_size
    return [
        *_layer(spec, count),
        WeightTensor("vector", (d,), 3 * count, "mtp"),  # enorm, hnorm, shared_head.norm
        WeightTensor("attention", (d, 2 * d), count, "mtp"),  # eh_proj: a linear, quantized as attention's are
        WeightTensor("head", (v, d), count, "mtp"),  # shared_head.head
        WeightTensor("embedding", (v, d), count, "mtp"),  # embed_tokens
    ]


def _fc_mtp(spec: ModelSpec, count: int) -> list[WeightTensor]:
    """Qwen3-Next's and Qwen3.5's MTP layers: a decoder layer of the full-attention kind (its last
    layer's), `fc` (2·d → d, no bias), `pre_fc_norm_embedding`, `pre_fc_norm_hidden` and `norm`;
    the embeddings and head are the model's, shared and not stored again."""
    d = spec.d_model
    return [
        *_layer(spec, count),
        WeightTensor("vector", (d,), 3 * count, "mtp"),  # pre_fc_norm_embedding, pre_fc_norm_hidden, norm
        WeightTensor("attention", (d, 2 * d), count, "mtp"),  # fc: a linear, stored as attention's are
    ]


def _hc_head(spec: ModelSpec) -> list[PlacedTensor]:
    """The model's hc_head beside its layers, which reduces the hyper-connections' copies to one."""
    return [t for e in spec.extras if not e.per_layer for t in extra_tensors(spec, e) if "hc_head" in t.name]


def _hc_mtp(spec: ModelSpec, count: int) -> list[WeightTensor]:
    """DeepSeek-V4's MTP blocks: the last layer's attention without its compressor (the window
    alone), its FFN, the hyper-connections' mixes and two norms; e_proj, h_proj, three norms and
    an hc_head of the model's shapes."""
    d, last = spec.d_model, spec.n_layers - 1
    attention = [t for t in attention_tensors(spec, (last,)) if not CompressedAttentionSpec.is_compressor(t.name)]
    ffn = spec.ffn_of(last)
    mixes = [t for e in spec.extras if e.per_layer for t in extra_tensors(spec, e)]
    tensors = (*attention, *(ffn_tensors(spec, ffn, (last,)) if ffn is not None else ()), *mixes, *_hc_head(spec))
    return [
        *(WeightTensor(t.role, t.shape, count * t.copies, "mtp", kv_heads=t.kv_heads, whole=t.whole) for t in tensors),
        WeightTensor("vector", (spec.norm_params,), spec.norms_per_layer * count, "mtp"),
        WeightTensor("vector", (d,), 3 * count, "mtp"),  # enorm, hnorm, norm
        WeightTensor("attention", (d, d), 2 * count, "mtp"),  # e_proj, h_proj: linears, stored as attention's are
    ]


def _hash_routed_layers(spec: ModelSpec, config: Mapping[str, Any]) -> int:
    """DeepSeek-V4's MoE layers that route by token id (`mlp_layer_types`' hash_moe, or the first
    `num_hash_layers`); 0 where the config says neither."""
    kinds, hashed = config.get("mlp_layer_types"), config.get("num_hash_layers")
    if isinstance(kinds, list):
        return sum(1 for k in kinds[: spec.n_layers] if k == "hash_moe")
    if isinstance(hashed, int) and not isinstance(hashed, bool) and hashed >= 0:
        return len([i for i in spec.moe_layers if i < hashed])
    return 0


def _score_routed_layers(spec: ModelSpec, config: Mapping[str, Any]) -> int:
    """The MoE layers whose routers add a score bias (router_score_bias): every one, but
    DeepSeek-V4's hash-routed ones."""
    if not spec.router_score_bias:
        return 0
    hashed = _hash_routed_layers(spec, config) if spec.model_type in HC_MTP_MODEL_TYPES else 0
    return len(spec.moe_layers) - hashed


def _hash_tables(spec: ModelSpec, config: Mapping[str, Any]) -> list[WeightTensor]:
    """DeepSeek-V4's hash-routed layers pick their experts from a table, token id → the k experts
    (DeepSeek's inference/model.py: `tid2eid`, vocabulary × k, int32): a buffer to transformers."""
    ffn = spec.moe_ffn
    layers = _hash_routed_layers(spec, config) if spec.model_type in HC_MTP_MODEL_TYPES and ffn is not None else 0
    # a router's (replicated on every GPU, as the routers are), in its own type whatever the plan
    return [WeightTensor("router", (spec.vocab_size, ffn.active_experts), layers, "table", stored="int32")] if layers and ffn else []


def _score_biases(spec: ModelSpec, config: Mapping[str, Any], mtp: int) -> list[WeightTensor]:
    """One bias a score-routed MoE layer, the MTP layers' too where the last layer is MoE: one
    float32 per expert of the router's pool (LongCat-Flash's zero experts among them)."""
    layers = _score_routed_layers(spec, config)
    if not layers or spec.moe_ffn is None:
        return []
    layers += mtp if spec.ffn_of(spec.n_layers - 1) is spec.moe_ffn else 0
    return [WeightTensor("vector", (spec.moe_ffn.experts + spec.zero_experts,), layers, "bias", stored="fp32")]


def shipped_tensors(spec: ModelSpec, config: Mapping[str, Any], *, mtp: bool = True) -> tuple[WeightTensor, ...]:
    """The tensors the checkpoint holds beside the model's (the MTP layers unless `mtp` is False)."""
    layers = mtp_layers(spec, config) if mtp else 0
    beside = (*_score_biases(spec, config, layers), *_hash_tables(spec, config))
    if not layers:
        return beside
    shaped = _hc_mtp if spec.model_type in HC_MTP_MODEL_TYPES else _fc_mtp if spec.model_type in FC_MTP_MODEL_TYPES else _mtp
    return (*shaped(spec, layers), *beside)
