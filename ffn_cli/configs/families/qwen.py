"""Qwen2 and Qwen3, dense and MoE: biased q, k, v (Qwen2) or q/k norms (Qwen3); the MoE kinds
route where decoder_sparse_step says; every one slides only with use_sliding_window, from
max_window_layers on.
"""

from __future__ import annotations

from ffn_cli.accounting import ParamTensor
from ffn_cli.configs.families.common import FamilyReader, attention_spec, decoder_spec, dense_spec, llama_like, moe_spec, sparse_step_layers
from ffn_cli.configs.families.family import AttentionReach, Family
from ffn_cli.models.spec import ModelSpec
from ffn_cli.spec import FFNSpec

__all__ = ["QWEN2", "QWEN2_MOE", "QWEN3", "QWEN3_MOE", "qwen_moe"]


def _qwen2(r: FamilyReader, name: str) -> ModelSpec:
    return llama_like(r, name, qkv_bias=True, o_bias=False)  # Qwen2Attention: q, k, v biased, o not


def qwen_moe(r: FamilyReader, d: int, *, normalize: bool) -> tuple[tuple[int, ...], FFNSpec | None, tuple[ParamTensor, ...]]:
    """Qwen2-MoE's FFN (Qwen3-Next's too): its MoE layers, their FFNSpec and the tensors beside
    it. One shared expert of its own width, scaled by sigmoid(shared_expert_gate(x)); `normalize`
    is norm_topk_prob's default."""
    experts = r.integer("num_experts", minimum=0)
    moe_layers = sparse_step_layers(r, experts)
    if not moe_layers:
        return moe_layers, None, ()
    shared = r.integer("shared_expert_intermediate_size", minimum=0)
    moe = moe_spec(
        r,
        d,
        d_ff=r.integer("moe_intermediate_size"),
        experts=experts,
        top_k=r.integer("num_experts_per_tok"),
        normalize=r.flag("norm_topk_prob", normalize),
        shared=1 if shared else 0,
        shared_d_ff=shared or None,
        shared_expert_gate=bool(shared),
    )
    # Width 0 leaves an empty shared expert, but its gate Linear(d, 1) is still built.
    extra = (ParamTensor("shared_expert_gate.weight", (1, d)),) if not moe.shared_hidden else ()
    return moe_layers, moe, extra


def _qwen2_moe(r: FamilyReader, name: str) -> ModelSpec:
    d = r.integer("hidden_size")
    moe_layers, moe, extra = qwen_moe(r, d, normalize=False)
    bias = r.flag("qkv_bias", True)
    dense = dense_spec(r, d) if len(moe_layers) < r.integer("num_hidden_layers") else None
    attention = attention_spec(r, d, qkv_bias=bias, o_bias=False)
    return decoder_spec(r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers, moe_extra=extra)


def _qwen3(r: FamilyReader, name: str) -> ModelSpec:
    bias = r.flag("attention_bias", False)
    return llama_like(r, name, qkv_bias=bias, qk_norm="head")  # q_norm, k_norm: RMSNorm(head_dim)


def _qwen3_moe(r: FamilyReader, name: str) -> ModelSpec:
    d, experts = r.integer("hidden_size"), r.integer("num_local_experts", minimum=0)
    moe_layers = sparse_step_layers(r, experts)
    moe = None
    if moe_layers:
        moe = moe_spec(
            r,
            d,
            d_ff=r.integer("moe_intermediate_size"),
            experts=experts,
            top_k=r.integer("num_experts_per_tok"),
            normalize=r.flag("norm_topk_prob", False),
        )
    dense = dense_spec(r, d) if len(moe_layers) < r.integer("num_hidden_layers") else None
    attention = attention_spec(r, d, qkv_bias=r.flag("attention_bias", False), qk_norm="head")
    return decoder_spec(r, name, attention=attention, dense=dense, moe=moe, moe_layers=moe_layers)


QWEN2 = Family(("qwen2",), _qwen2, reach=AttentionReach(sliding="max_window_layers"))
QWEN2_MOE = Family(("qwen2_moe",), _qwen2_moe, reach=AttentionReach(sliding="max_window_layers"))
QWEN3 = Family(("qwen3",), _qwen3, reach=AttentionReach(sliding="max_window_layers"))
QWEN3_MOE = Family(("qwen3_moe",), _qwen3_moe, reach=AttentionReach(sliding="max_window_layers"))
