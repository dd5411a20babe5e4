"""What a checkpoint ships beside the model transformers builds from its config, counted in its
bytes: the multi-token-prediction (MTP) layers a config declares, and DeepSeek-V3's router score
biases. Pure Python.

An MTP layer (`num_nextn_predict_layers`: DeepSeek-V3's layer 61, GLM-4.5's layer 46, GLM-5's
and DeepSeek-V3.2's with their indexer), as the checkpoints store it and vLLM's deepseek_mtp /
glm4_moe_mtp load it: one more decoder layer of the last layer's kind (attention, its MoE FFN,
its norms), `enorm` and `hnorm` (norms of the
embedding and of the hidden state), `eh_proj` (2·d → d, a linear, stored as the layers' are),
`shared_head` (a norm and a copy of the LM head) and a copy of the embeddings. transformers
builds none of it, so `ffn params` counts the model without it; serving may drop it (`--no-mtp`).

DeepSeek-V3's routers choose experts on scores plus `e_score_correction_bias`, one float32 per
expert in every MoE layer (DeepSeek's inference/model.py keeps the Gate's bias in float32 for
the 7,168-wide model): a buffer to transformers, a tensor in the checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ffn_cli.costs.weights import WeightTensor
from ffn_cli.models.layout import attention_tensors, ffn_tensors
from ffn_cli.models.spec import ModelSpec

__all__ = ["MTP_MODEL_TYPES", "mtp_layers", "shipped_tensors", "unsized_mtp_layers"]

# The families whose checkpoints hold their MTP layers in this shape (vLLM's deepseek_mtp and
# glm4_moe_mtp load them): DeepSeek-V3 and V3.2, GLM-4.5 to 4.7, GLM-4.7-Flash (glm4_moe_lite), GLM-5.
MTP_MODEL_TYPES = frozenset({"deepseek_v3", "deepseek_v32", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa"})


def mtp_layers(spec: ModelSpec, config: Mapping[str, Any]) -> int:
    """The MTP layers the config declares (0 for a family whose checkpoints ffn does not know to hold them)."""
    n = config.get("num_nextn_predict_layers", 0)
    known = spec.model_type in MTP_MODEL_TYPES and isinstance(n, int) and not isinstance(n, bool)
    return n if known and n > 0 else 0


def unsized_mtp_layers(spec: ModelSpec, config: Mapping[str, Any]) -> int:
    """The MTP layers a config declares for a family whose checkpoints' MTP shape ffn does not know
    (DeepSeek-V4's, beside its hyper-connections): named as left out, never counted as another shape."""
    n = config.get("num_nextn_predict_layers", 0)
    declared = isinstance(n, int) and not isinstance(n, bool) and n > 0
    return n if declared and spec.model_type not in MTP_MODEL_TYPES else 0


def _layer(spec: ModelSpec, count: int) -> list[WeightTensor]:
    """`count` decoder layers of the model's last layer's kind: its attention and FFN blocks as
    the layout places them, and its norms."""
    last = spec.n_layers - 1
    ffn = spec.ffn_of(last)
    tensors = (*attention_tensors(spec, (last,)), *(ffn_tensors(spec, ffn, (last,)) if ffn is not None else ()))
    out = [WeightTensor(t.role, t.shape, count * t.copies, "mtp") for t in tensors]
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


def _score_biases(spec: ModelSpec, config: Mapping[str, Any], mtp: int) -> list[WeightTensor]:
    if spec.model_type != "deepseek_v3" or config.get("topk_method") != "noaux_tc" or spec.moe_ffn is None:
        return []
    layers = len(spec.moe_layers) + (mtp if spec.ffn_of(spec.n_layers - 1) is spec.moe_ffn else 0)
    return [WeightTensor("vector", (spec.moe_ffn.experts,), layers, "bias", stored="fp32")]


def shipped_tensors(spec: ModelSpec, config: Mapping[str, Any], *, mtp: bool = True) -> tuple[WeightTensor, ...]:
    """The tensors the checkpoint holds beside the model's (the MTP layers unless `mtp` is False)."""
    layers = mtp_layers(spec, config) if mtp else 0
    return (*(_mtp(spec, layers) if layers else []), *_score_biases(spec, config, layers))
