"""The attribution rule on module paths alone (no torch): each line of RULES, in order."""

from __future__ import annotations

import pytest

from ffn_cli.configs.attribution import RULES, Owner, attribute, is_experts, pattern


def _path(text: str) -> tuple[Owner, ...]:
    """'model:LlamaModel.layers:ModuleList.0:LlamaDecoderLayer' → owners (class optional)."""
    owners = []
    for part in text.split("."):
        name, _, cls = part.partition(":")
        owners.append(Owner(name, cls or "Module"))
    return tuple(owners)


@pytest.mark.parametrize(
    ("path", "kind", "shown"),
    [
        ("model.layers.0.self_attn:LlamaAttention.q_proj:Linear", "attention", "model.layers.*.self_attn"),
        ("model.layers.0.mlp:LlamaMLP.down_proj:Linear", "ffn", "model.layers.*.mlp"),
        ("model.layers.0.input_layernorm:LlamaRMSNorm", "norm", "model.layers.*.input_layernorm"),
        ("model.norm:NemotronLayerNorm1P", "norm", "model.norm"),
        ("model.embed_tokens:Embedding", "embedding", "model.embed_tokens"),
        ("lm_head:Linear", "head", "lm_head"),
        ("gpt_neox.embed_in:Embedding", "embedding", "gpt_neox.embed_in"),
        ("embed_out:Linear", "head", "embed_out"),
        ("pooler:BertPooler.dense:Linear", "pooler", "pooler"),
        ("embeddings_project:Linear", "embedding", "embeddings_project"),
        # Whole name parts: Gemma 3n's altup_unembed_projections are no embeddings.
        ("model.language_model.altup_unembed_projections.0:Linear", "other", "model.language_model.altup_unembed_projections.*"),
        ("model.embed_tokens_per_layer:Gemma3nTextScaledWordEmbedding", "embedding", "model.embed_tokens_per_layer"),
        # Experts inside mlp are FFN, and the row names the outermost FFN block.
        ("model.layers.3.mlp:MixtralSparseMoeBlock.experts:MixtralExperts", "ffn", "model.layers.*.mlp"),
        ("model.layers.3.mlp:Qwen2MoeSparseMoeBlock.shared_expert_gate:Linear", "ffn", "model.layers.*.mlp"),
        # GPT-2's c_attn inside attn: the outer block names the row.
        ("transformer.h.0.attn:GPT2Attention.c_attn:Conv1D", "attention", "transformer.h.*.attn"),
        # OPT / BART / Whisper keep the FFN as two Linears on the layer.
        ("model.decoder.layers.0.fc1:Linear", "ffn", "model.decoder.layers.*.fc1"),
        # T5: by class, and later indices stay (layer.1 is the FFN sub-layer of every block).
        ("encoder.block.0.layer.1:T5LayerFF.DenseReluDense:T5DenseActDense.wi:Linear", "ffn", "encoder.block.*.layer.1"),
        ("encoder.block.0.layer.0:T5LayerSelfAttention.SelfAttention:T5Attention.q:Linear", "attention", "encoder.block.*.layer.0"),
        # BERT: intermediate and the layer's own output are the FFN; attention.output is attention's.
        ("encoder.layer.0.intermediate:BertIntermediate.dense:Linear", "ffn", "encoder.layer.*.intermediate"),
        ("encoder.layer.0.output:BertOutput.dense:Linear", "ffn", "encoder.layer.*.output"),
        ("encoder.layer.0.attention:BertAttention.output:BertSelfOutput.dense:Linear", "attention", "encoder.layer.*.attention"),
        ("encoder.layer.0.output:BertOutput.LayerNorm:LayerNorm", "norm", "encoder.layer.*.output.LayerNorm"),
        # A mixture of attention heads is attention: attention is tried before FFN.
        ("model.layers.0.self_attention:JetMoeAttention.experts:JetMoeMoA.input_linear:X", "attention", "model.layers.*.self_attention"),
        # A head's name inside a layer is not the head: Switch Transformers' router.
        ("encoder.block.0.layer.1:SwitchLayerFF.mlp:SwitchSparseMLP.router:Router.classifier:Linear", "ffn", "encoder.block.*.layer.1"),
        # Unplaced parameters are named by the block inside the layer that holds them.
        ("backbone.layers.0.mixer:MambaMixer.conv1d:Conv1d", "attention", "backbone.layers.*.mixer"),
        ("model.layers.0.mamba:GraniteMoeHybridMambaLayer.in_proj:Linear", "attention", "model.layers.*.mamba"),
        ("model.layers.0.rwkv:Rwkv7TimeMix.key:Linear", "other", "model.layers.*.rwkv"),
        ("vision_tower.patch_conv:Conv2d", "other", "vision_tower.patch_conv"),
        # DeepSeek-V4's hyper-connections mix copies of the residual stream, whatever their names say.
        ("model.layers.0.attn_hc:DeepseekV4HyperConnection", "other", "model.layers.*.attn_hc"),
        ("model.layers.0.ffn_hc:DeepseekV4HyperConnection", "other", "model.layers.*.ffn_hc"),
        ("model.hc_head:DeepseekV4HyperHead", "other", "model.hc_head"),
    ],
)
def test_each_line_of_the_rule(path: str, kind: str, shown: str) -> None:
    owners = _path(path)
    got, depth = attribute(owners, is_embedding=owners[-1].cls == "Embedding")
    assert got == kind
    assert pattern(owners[:depth]) == shown


def test_norm_and_embedding_are_judged_by_the_holder_first() -> None:
    # A q/k norm is attention's (Qwen3's q_norm, as the qwen3 reader counts it), any other
    # norm a norm; an Embedding inside attention is an embedding (T5's relative position
    # bias), whatever the path says.
    assert attribute(_path("model.layers.0.self_attn:Qwen3Attention.q_norm:Qwen3RMSNorm"))[0] == "attention"
    assert attribute(_path("encoder.layer.0.attention:BertAttention.output.LayerNorm:LayerNorm"))[0] == "norm"
    relative = _path("encoder.block.0.layer.0.SelfAttention:T5Attention.relative_attention_bias:Embedding")
    assert attribute(relative, is_embedding=True)[0] == "embedding"
    # A holder that is neither: the path decides.
    assert attribute((*relative[:-1], Owner("relative_attention_bias", "Linear")))[0] == "attention"


def test_a_parameter_on_the_model_itself_is_other() -> None:
    assert attribute(()) == ("other", 0)


def test_the_rule_lists_every_kind_once_ending_with_other() -> None:
    kinds = [kind for kind, _ in RULES]
    assert kinds == ["vision", "norm", "embedding", "head", "pooler", "attention", "ffn", "other"]
    assert all(text for _, text in RULES)


@pytest.mark.parametrize(
    ("name", "cls", "routed"),
    [
        ("experts", "MixtralExperts", True),
        ("experts", "ModuleList", True),
        ("input_linear", "JetMoeParallelExperts", True),
        ("shared_experts", "DeepseekV3MLP", False),
        ("shared_expert", "Qwen2MoeMLP", False),
        ("mlp", "LlamaMLP", False),
    ],
)
def test_routed_experts_are_not_shared_ones(name: str, cls: str, routed: bool) -> None:
    assert is_experts(name, cls) is routed
