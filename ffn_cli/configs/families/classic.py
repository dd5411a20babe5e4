"""The early layouts: LayerNorms and biases, fused or Conv1D projections, parallel blocks
(Phi-1/2, GPT-NeoX, Falcon, GPT-2) and the bidirectional encoders (BERT, RoBERTa, XLM-R).
"""

from __future__ import annotations

from ffn_cli.attention import AttentionSpec, QKNorm
from ffn_cli.configs.families.common import FamilyReader, attention_spec, decoder_spec, dense_spec
from ffn_cli.configs.families.family import AttentionReach, Family
from ffn_cli.errors import FFNError
from ffn_cli.i18n import _
from ffn_cli.models.spec import ModelSpec
from ffn_cli.spec import FFNSpec

__all__ = ["BERT", "FALCON", "GPT2", "GPT_NEOX", "PHI"]


def _phi(r: FamilyReader, name: str) -> ModelSpec:
    # Phi-1/2: one LayerNorm feeds attention and MLP in parallel; biases everywhere, a biased head;
    # qk_layernorm adds LayerNorm(head_dim) on q and k.
    d = r.integer("hidden_size")
    qk: QKNorm = "head" if r.flag("qk_layernorm", False) else "none"
    attention = attention_spec(r, d, qkv_bias=True, qk_norm=qk, qk_norm_bias=True)
    dense = dense_spec(r, d, gated=False, bias=True)
    return decoder_spec(
        r, name, attention=attention, dense=dense, norm="layernorm", norms_per_layer=1, parallel_block=True, lm_head_bias=True
    )


def _gpt_neox(r: FamilyReader, name: str) -> ModelSpec:
    # Pythia: fused query_key_value, LayerNorms before attention and before the MLP (parallel residual by default).
    d = r.integer("hidden_size")
    bias = r.flag("attention_bias", True)
    attention = attention_spec(r, d, qkv_bias=bias, head_dim_key=False)  # query_key_value is d → 3·d whatever head_dim says
    dense = dense_spec(r, d, gated=False, bias=True)
    parallel = r.flag("use_parallel_residual", True)
    return decoder_spec(r, name, attention=attention, dense=dense, norm="layernorm", fused_qkv=True, parallel_block=parallel)


def _falcon(r: FamilyReader, name: str) -> ModelSpec:
    # One fused query_key_value: multi-query (one KV head), or num_kv_heads under the new decoder
    # architecture; `bias` on every Linear; 1 or 2 LayerNorms per layer.
    d = r.integer("hidden_size")
    new, multi_query, parallel = r.flag("new_decoder_architecture", False), r.flag("multi_query", True), r.flag("parallel_attn", True)
    heads = r.integer("num_attention_heads")
    kv = (r.opt_integer("num_kv_heads") or heads) if new or not multi_query else 1
    bias = r.flag("bias", False)
    attention = attention_spec(r, d, qkv_bias=bias, kv_heads=kv, head_dim_key=False)
    ffn_key = "ffn_hidden_size" if r.has("ffn_hidden_size") else None
    d_ff = r.integer(ffn_key) if ffn_key else 4 * d
    dense = FFNSpec(variant=r.variant("activation", gated=False), d_model=d, d_ff=d_ff, bias=bias)
    ln = r.opt_integer("num_ln_in_parallel_attn") or (2 if new else 1)
    norms = 2 if not parallel or ln == 2 else 1
    return decoder_spec(
        r, name, attention=attention, dense=dense, norm="layernorm", norms_per_layer=norms, fused_qkv=True, parallel_block=parallel
    )


def _gpt2(r: FamilyReader, name: str) -> ModelSpec:
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


def _bert(r: FamilyReader, name: str) -> ModelSpec:
    # BertModel (RoBERTa, XLM-R alike): word + position + token-type embeddings and their LayerNorm,
    # post-norm layers, pooler. RoBERTa's padding-offset positions are rows of the same table.
    d = r.integer("hidden_size")
    heads = r.integer("num_attention_heads")
    if d % heads:
        raise FFNError(r.key("num_attention_heads"), heads, _("must divide hidden_size ({d})").format(d=d))
    positions = r.integer("max_position_embeddings")
    first_position = 0
    if r.model_type != "bert":  # RoBERTa's positions, as fairseq's, start past its padding row: padding_idx + 1
        pad = r.integer("pad_token_id", minimum=0)
        if pad + 1 >= positions:
            raise FFNError(
                r.key("pad_token_id"), pad, _("leaves no position rows of the {rows:,}: positions start past it").format(rows=positions)
            )
        first_position = pad + 1
    return ModelSpec(
        name=name,
        model_type=r.model_type,
        d_model=d,
        n_layers=r.integer("num_hidden_layers"),
        vocab_size=r.integer("vocab_size"),
        attention=AttentionSpec(d_model=d, n_heads=heads, qkv_bias=True, o_bias=True),
        dense_ffn=dense_spec(r, d, gated=False, bias=True),
        max_positions=positions,
        first_position=first_position,
        type_vocab_size=r.integer("type_vocab_size", minimum=0),
        norm="layernorm",
        final_norm=False,
        embedding_norm=True,
        lm_head=False,
        pooler=True,
        hidden_act=r.hidden_act,
        source=r.source,
    )


PHI = Family(("phi",), _phi)
GPT_NEOX = Family(("gpt_neox",), _gpt_neox)
FALCON = Family(("falcon",), _falcon)
GPT2 = Family(("gpt2",), _gpt2)
BERT = Family(("bert", "roberta", "xlm-roberta"), _bert, reach=AttentionReach(causal=False))
