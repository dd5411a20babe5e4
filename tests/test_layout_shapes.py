"""Layouts of model types no reader knows whose modules take shapes of their own
(configs/layer_read/): one projection to the queries, keys and values; q/k norms without
weights; a short convolution; output gates, norms and sinks beside a latent attention; tensors
beside a dense FFN's projections; residual scales and gates. Each held to the whole model built
on meta and, where it keeps state, to transformers' own cache after a forward."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ffn_cli.configs.attribution import Owner, attribute
from ffn_cli.costs.decode_state import decode_state
from ffn_cli.models.count import count_model
from ffn_cli.render.presenters.costs import costs_data
from ffn_cli.services.costs import CostOptions, model_costs
from tests.module_flops import module_flops

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from ffn_cli.configs import meta_build  # noqa: E402  (torch and transformers)
from ffn_cli.configs.layer_read import read_layout  # noqa: E402

_SMALL = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
              pad_token_id=0)  # fmt: skip


def _config(model_type: str, **keys: Any) -> dict[str, Any]:
    return {**transformers.AutoConfig.for_model(model_type, **{**_SMALL, **keys}).to_dict(), "model_type": model_type}


def _layout(config: dict[str, Any]) -> Any:
    return read_layout(config, name="small", source="small")


def _counts_the_whole_build(config: dict[str, Any]) -> Any:
    layout = _layout(config)
    assert count_model(layout.spec).total_params == meta_build.count(config, name="x", source="x").total_params
    return layout


def _cache_after(config: dict[str, Any], context: int) -> Any:
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval().requires_grad_(False)
    with torch.no_grad():
        return model(torch.randint(1, 100, (2, context)), use_cache=True).past_key_values


@pytest.mark.parametrize(("model_type", "kv_heads"), [("mpt", 4), ("bloom", 4), ("persimmon", 4), ("gpt_bigcode", 1), ("codegen", 4)])
def test_one_projection_to_queries_keys_and_values(model_type: str, kv_heads: int) -> None:
    # MPT's Wqkv, BLOOM's and Persimmon's query_key_value, StarCoder's c_attn (one KV head), CodeGen's
    # qkv_proj: the width beside the queries' is the keys' and values', whatever num_key_value_heads says.
    config = _config(model_type)
    layout = _counts_the_whole_build(config)
    attention = layout.spec.attention
    assert (attention.n_heads, attention.n_kv_heads, attention.head_dim) == (4, kv_heads, 16)
    if model_type == "codegen":  # its rotary width does not fit a model this small: counted, not run
        return
    # By hand: K and V of each of 7 tokens over the KV heads × 16; transformers' cache holds as much a sequence.
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, 7)
    assert kind.elements_per_layer == 7 * 2 * kv_heads * 16
    cache = _cache_after(config, 7)
    assert [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers] == [kind.elements_per_layer] * 2


def test_qk_norms_without_weights_count_none() -> None:
    # NanoChat's q_norm and k_norm are RMSNorms with no weight: nothing to count, not a norm per head.
    layout = _counts_the_whole_build(_config("nanochat"))
    assert layout.spec.attention.qk_norm == "none"


@pytest.mark.parametrize("context", [3, 12])
def test_a_short_convolution_against_transformers(context: int) -> None:
    # LFM3's short convolution, as LFM2's: in_proj 64 → 3 · 64, a depthwise conv of 7 taps, out_proj.
    config = _config("lfm3")
    layout = _counts_the_whole_build(config)
    mixer = layout.spec.mixer
    assert mixer is not None and mixer.kind == "short conv" and mixer.layers == (0, 1)
    # By hand: the conv's 6 latest inputs of its 64 channels, whatever the context.
    assert (mixer.recurrent_state_elements, mixer.conv_state_elements) == (0, 6 * 64)
    cache = _cache_after(config, context)
    for i in mixer.layers:  # transformers keeps the conv's whole kernel, the newest input included
        conv = cache.get_conv_state(i, state_idx=0)
        assert conv.numel() // 2 - conv.shape[1] == mixer.conv_state_elements


def test_gates_norms_and_sinks_beside_a_latent_attention_keep_nothing() -> None:
    # Hunyuan V4's MLA has an output gate (gate_proj) and sinks beside it, and a DSA indexer: the gate and
    # the sinks are counted and run once a token, keep nothing while decoding; the indexer keeps its keys.
    layout = _counts_the_whole_build(_config("hy_v4"))
    assert not any("caches while decoding" in str(x) for x in layout.left_out)
    names = {t.name.split(" ")[0] for t in layout.spec.attention_extra}
    assert {"gate_proj.weight", "sinks"} <= names
    assert layout.spec.index_key_width == 128


def _dory() -> dict[str, Any]:
    # One input layer, two recurrent ones, one output layer: num_hidden_layers is their sum.
    return _config("dory", num_hidden_layers=4, n_input_layers=1, n_output_layers=1)


def test_tensors_beside_a_dense_ffn_are_kept_by_name() -> None:
    # Dory's MLP holds two scale vectors beside its projections: counted in every layer, by name.
    layout = _counts_the_whole_build(_dory())
    (beside,) = (e for e in layout.spec.extras if e.per_layer)
    assert {t.name for t in beside.tensors} >= {"mlp.suv_gate", "mlp.suv_up"}


@pytest.mark.parametrize(
    ("name", "cls", "kind"),
    [
        ("post_attention_residual_scale", "ZayaResidualScaling", "other"),
        ("attention_residual_gate", "ErgoResidualGate", "other"),
        ("attn_hyper_connection", "Qwen4ExpTextGatedResidual", "other"),
        ("attn_hc", "DeepseekV4HyperConnection", "other"),
        ("attention", "BridgeTowerResidualAttention", "attention"),  # a token mixer whose name has Residual inside
    ],
)
def test_residual_scales_and_gates_are_no_token_mixer(name: str, cls: str, kind: str) -> None:
    path = (Owner("model", "Model"), Owner("layers", "ModuleList"), Owner("0", "DecoderLayer"), Owner(name, cls))
    assert attribute(path)[0] == kind


def _minimax(**keys: Any) -> dict[str, Any]:
    # Lightning attention in layer 0 (4 heads × 16, blocks of 4), softmax attention in layer 1.
    shape = dict(head_dim=16, block_size=4, num_local_experts=4, num_experts_per_tok=2, layer_types=["linear_attention", "full_attention"])
    return _config("minimax", **{**shape, **keys})


def test_lightning_attention_state_against_transformers() -> None:
    config = _minimax()
    layout = _counts_the_whole_build(config)
    mixer = layout.spec.mixer
    assert mixer is not None and mixer.kind == "lightning attention" and mixer.layers == (0,)
    # By hand: a 16 × 16 state per head, 4 heads, whatever the context; no conv.
    assert (mixer.recurrent_state_elements, mixer.conv_state_elements) == (4 * 16 * 16, 0)
    cache = _cache_after(config, 9)
    (state,) = (t for t in cache.linear_cache if isinstance(t, torch.Tensor))
    assert state.numel() // 2 == mixer.recurrent_state_elements
    # The softmax layer keeps K and V of each token, 2 KV heads × 16.
    kinds = {str.__str__(k.kind): k for k in decode_state(layout.spec, layout.windows, layout.chunks, 9)}
    assert kinds["attention"].elements_per_layer == 9 * 2 * 2 * 16


def test_lightning_attention_flops_against_flop_counter() -> None:
    # Two whole blocks of 4 tokens through the lightning layer: FlopCounterMode's matmuls are the
    # projections (qkv, output gate, out) and the scan's, 8 tokens at ffn's per-token rate.
    config = _minimax()
    mixer = _layout(config).spec.mixer
    counts = module_flops(config, torch.randint(1, 100, (1, 8)))
    projections = sum(counts[f"layers.0.self_attn.{n}"] for n in ("qkv_proj", "output_gate", "out_proj"))
    assert projections == 8 * mixer.projection_flops
    # By hand, a block and head: q·kᵀ and its product with v (2 · 4² · 16 each), the state's read and update (2 · 4 · 16² each).
    assert mixer.scan.chunk_flops() == 4 * (4 * 4 * 4 * 16 + 4 * 4 * 16 * 16)
    assert counts["layers.0.self_attn"] - projections == 8 * mixer.scan.flops(8) == 2 * mixer.scan.chunk_flops()


def test_lightning_attention_decode_flops_against_flop_counter() -> None:
    # One token decoded after 8: the state's rank-one update and the query's read of it (2 · 16² each, 4 heads).
    from torch.utils.flop_counter import FlopCounterMode

    config = _minimax()
    mixer = _layout(config).spec.mixer
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    with torch.no_grad():
        cache = model(torch.randint(1, 100, (1, 8)), use_cache=True).past_key_values
        with FlopCounterMode(display=False) as counter:
            model(torch.randint(1, 100, (1, 1)), past_key_values=cache, use_cache=True)
    counts = {name.removeprefix("MiniMaxForCausalLM.model."): sum(c.values()) for name, c in counter.get_flop_counts().items()}
    projections = sum(counts[f"layers.0.self_attn.{n}"] for n in ("qkv_proj", "output_gate", "out_proj"))
    assert counts["layers.0.self_attn"] - projections == mixer.scan.decode_flops() == 4 * 4 * 16 * 16


@pytest.mark.parametrize("context", [3, 9])
def test_a_latent_attention_with_a_window_against_transformers(context: int) -> None:
    # dots3: two MLA layers with an indexer over every token, two sliding MLA layers (a window of 4) of
    # another shape (a 1,024-wide latent); each keeps its latent and rotary key a token, the sliding
    # ones their window's 3 latest, as transformers' sliding-window cache layer does.
    config = _config("dots3_note_text", num_hidden_layers=4, num_key_value_heads=4, sliding_window=4)
    layout = _counts_the_whole_build(config)
    assert layout.windows == (None, None, 4, 4)
    kinds = {str.__str__(k.kind): k for k in decode_state(layout.spec, layout.windows, layout.chunks, context)}
    assert kinds["attention"].elements_per_layer == context * (512 + 64)
    assert kinds["attention, sliding 4"].elements_per_layer == min(context, 3) * (1024 + 64)
    cache = _cache_after(config, context)
    held = [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers]
    assert held[2:] == [kinds["attention, sliding 4"].elements_per_layer] * 2


def test_layers_that_run_more_than_once_are_named() -> None:
    # Dory runs its recurrent layers n_recurrent_loops times, each pass caching its own keys: ffn sizes one
    # pass, and says so where the verdict says what it leaves out.
    layout = _counts_the_whole_build(_dory())
    assert any(str(x).startswith("its n_recurrent_loops 2: some layers run 2 times over") for x in layout.left_out)


def test_learned_positions_are_position_embeddings() -> None:
    # StarCoder's wpe, 1,024 positions × 64: embeddings, not a tensor beside the layers.
    config = _config("gpt_bigcode", n_positions=1024)
    spec = _counts_the_whole_build(config).spec
    assert spec.max_positions == 1024 and not any(e.name == "beside the layers" for e in spec.extras)
    assert count_model(spec).embedding_params == (128 + 1024) * 64


def test_lightning_attention_norm_is_counted_as_the_whole_build_counts_it() -> None:
    # Its output norm is a norm, as the attribution rule sorts the whole build's parameters.
    config = _minimax()
    counted = count_model(_layout(config).spec)
    built = meta_build.count(config, name="x", source="x")
    assert (counted.attention_params, counted.norm_params) == (built.params_of("attention"), built.params_of("norm"))


def test_lightning_attention_without_blocks_is_refused() -> None:
    from ffn_cli.errors import FFNError

    with pytest.raises(FFNError, match="block_size"):
        _layout(_minimax(block_size=0))


def test_norms_named_as_built() -> None:
    # BLOOM normalises its embeddings (word_embeddings_layernorm) beside its final ln_f; MPT's LayerNorms have no bias.
    bloom = _counts_the_whole_build(_config("bloom")).spec
    assert bloom.embedding_norm and bloom.final_norm and bloom.norm == "layernorm"
    assert not any(e.name == "beside the layers" for e in bloom.extras)
    assert _counts_the_whole_build(_config("mpt")).spec.norm == "layernorm_no_bias"


def test_tensors_of_one_row_an_expert_are_counted_beside_the_experts() -> None:
    # Ergo's experts each end in a norm ([4, 64]: one row an expert) and its shared expert in one of
    # its own (64): counted by name beside the FFN, their work elementwise. The layout's total is the
    # whole build's, its FFN's FLOPs a token FlopCounterMode's on 5 tokens (2 of 4 experts of two
    # projections, the shared expert's two, the router); its attention keeps K and V of every token.
    config = _config("ergo", num_hidden_layers=2, num_experts=4, num_experts_per_tok=2, head_dim=16, moe_intermediate_size=32)
    layout = _counts_the_whole_build(config)
    ffn = layout.spec.moe_ffn
    assert ffn is not None
    beside = {t.name: t.shape for t in layout.spec.extra_of(ffn)}
    assert beside["experts.post_expert_norm (weight)"] == (4, 64) and beside["shared_experts.norm (weight)"] == (64,)
    # The routed experts by hand (FlopCounterMode does not see transformers' stock experts kernel):
    # 2 picks of two 64 × 32 projections; the shared expert's and the router's, FlopCounterMode's.
    counts = module_flops(config, torch.randint(1, 100, (1, 5)))
    moe_layer = next(i for i in range(2) if i in layout.spec.moe_layers)
    seen = counts[f"layers.{moe_layer}.mlp.shared_experts"] + counts[f"layers.{moe_layer}.mlp.gate"]
    assert 5 * layout.spec.ffn_matmul_flops(ffn) == seen + 5 * 2 * 2 * 2 * 64 * 32
    kind = decode_state(layout.spec, layout.windows, layout.chunks, 3)[0]
    cache = _cache_after(config, 3)
    assert (cache.layers[0].keys.numel() + cache.layers[0].values.numel()) // 2 == kind.elements_per_layer


def test_only_linear_weights_take_a_linears_format() -> None:
    # A quantizer replaces Linear layers: Qwen3-Next's gate half of q_proj is one (its Linear's rows), a conv's
    # taps and DeepSeek-V4's compressor position bias are not.
    from ffn_cli.configs.families import model_spec_from_config
    from ffn_cli.configs.files import load_preset
    from ffn_cli.models.layout import model_layout

    qwen = model_spec_from_config(dict(load_preset("qwen3-next-80b-a3b")), name="q", source="q")
    roles = {t.name: t.role for t in model_layout(qwen)}
    assert roles["q_proj.weight (output gate half)"] == "attention"
    v4 = _layout({k: v for k, v in load_preset("deepseek-v4-flash").items() if not k.startswith("_")}).spec
    roles = {t.name: t.role for t in model_layout(v4)}
    assert roles["compressor (position_bias)"] == "other" and roles["compressor.kv_proj.weight"] == "attention"


@pytest.mark.parametrize("model_type", ["opt", "xglm"])
def test_an_ffn_straight_in_the_decoder_layer(model_type: str) -> None:
    # OPT's and XGLM's fc1 and fc2 sit in the decoder layer itself, with no MLP module around them:
    # one dense FFN of ffn_dim. FlopCounterMode's fc1 and fc2 on 5 tokens are 2 · 2 · 64 · 96 a token;
    # the attention keeps K and V of every token, 4 heads × 16, as transformers' cache does.
    config = _config(model_type, ffn_dim=96, max_position_embeddings=64, num_key_value_heads=4)  # no KV-head key of its own
    layout = _counts_the_whole_build(config)
    ffn = layout.spec.ffn_of(0)
    assert ffn is not None and (ffn.variant, ffn.d_ff) == ({"opt": "relu", "xglm": "gelu"}[model_type], 96)
    counts = module_flops(config, torch.randint(1, 100, (1, 5)))
    layer = "decoder.layers.0" if model_type == "opt" else "layers.0"
    assert counts[f"{layer}.fc1"] + counts[f"{layer}.fc2"] == 5 * 2 * 2 * 64 * ffn.d_ff
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, 7)
    assert kind.elements_per_layer == 7 * 2 * 4 * 16
    cache = _cache_after(config, 7)
    assert [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers] == [kind.elements_per_layer] * 2


def test_learned_positions_after_rows_of_their_own() -> None:
    # OPT's position table keeps 2 rows before its max_position_embeddings (its `offset`): 66 × 64.
    spec = _counts_the_whole_build(_config("opt", ffn_dim=96, max_position_embeddings=64, num_key_value_heads=4)).spec
    assert spec.max_positions == 66 and not any(e.name == "beside the layers" for e in spec.extras)


def test_layers_the_models_class_builds_otherwise_are_read_as_it_builds_them() -> None:
    # TrOCR's causal LM sets is_decoder, which gives each layer a cross-attention over an encoder's
    # output: read from the layer as the model builds it, never from a layer built without it (which
    # counted 2 × (4 · (64² + 64) + 2 · 64) fewer parameters: its cross-attention and that one's norm).
    config = _config("trocr", d_model=64, decoder_ffn_dim=96, decoder_layers=2, decoder_attention_heads=4)
    layout = _layout(config)
    assert count_model(layout.spec).total_params == meta_build.count(config, name="x", source="x").total_params
    assert layout.spec.source_unsized and layout.spec.beside_attention == (0, 1)


def test_layers_that_attend_to_an_images_tokens_are_named_in_the_verdict(tmp_path: Any) -> None:
    # Llama 3.2 Vision: every fifth layer of its text model attends to the image's tokens, whose keys
    # and values are the image's, not the context's. The answer counts it exactly, sizes what those
    # layers keep for one image, and its verdict names what more images keep as left out (they had
    # once been built as self-attention layers).
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    config = _config("mllama", num_hidden_layers=5, cross_attention_layers=[3])
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total_params"] == meta_build.count(config, name="x", source="x").total_params
    assert any("more than one image of 4 tiles (4,100 tokens)" in what for what in data["per_gpu_memory"]["left_out"])
    # By hand: one image of transformers' default 4 tiles of 448-pixel images in 14-pixel patches,
    # (448 / 14)² + 1 = 1,025 tokens a tile; K and V over the text config's KV heads × head width a token.
    (cross,) = [k for k in data["decode_state"]["kinds"] if "image" in k["kind"]]
    assert cross["layers"] == len(config["text_config"]["cross_attention_layers"]) and cross.get("sized", True)
    assert cross["image_tokens"] == 4 * 1025 and cross["recurrent_state_elements"] is None
    text = config["text_config"]
    assert cross["elements_per_layer"] == 2 * text["num_key_value_heads"] * text["hidden_size"] // text["num_attention_heads"] * 4 * 1025
    # At 60 columns the long kind wraps between its words; every size keeps its unit whole.
    narrow = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode"], env={"COLUMNS": "60"})
    table = narrow.stdout.split("what decoding keeps per sequence")[1].split("\nper sequence")[0]
    assert "cross-attention over" in table and max(map(len, table.splitlines())) <= 60
    assert all(re.fullmatch(r"\d[\d,.]* [KMGT]?i?B", size) for size in re.findall(r"\d[\d,.]* \S+B\S*", table))
    assert len(re.findall(r"\d[\d,.]* [KMG]iB", table)) == 4  # both rows' per layer and all layers


def _griffin() -> dict[str, Any]:
    return _config("recurrent_gemma", lru_width=64, num_key_value_heads=1, attention_window_size=4,
                   block_types=["recurrent", "recurrent", "attention"], num_hidden_layers=3)  # fmt: skip


def test_a_griffin_recurrent_block_against_transformers() -> None:
    # RecurrentGemma's recurrent block: linear_x, linear_y (64 → 64), a depthwise conv of 4 taps, the
    # RG-LRU's two gates (4 heads × 16 × 16) and linear_out. Decoding keeps the RG-LRU's state, 64
    # values in float32 whatever the dtype, and the conv's 3 latest inputs of its 64 channels, as
    # transformers' modules hold them after a forward; the attention layer its window's 3 latest
    # tokens, one KV head × 16 for K and for V, as transformers' sliding cache layer does.
    config = _griffin()
    layout = _counts_the_whole_build(config)
    mixer = layout.spec.mixer
    assert mixer is not None and mixer.kind == "RG-LRU" and mixer.layers == (0, 1)
    assert (mixer.recurrent_state_elements, mixer.state_dtype_bytes, mixer.conv_state_elements) == (64, 4, 3 * 64)
    kinds = {str.__str__(k.kind): k for k in decode_state(layout.spec, layout.windows, layout.chunks, 9)}
    assert kinds["RG-LRU"].bytes_per_layer(2) == 64 * 4 + 3 * 64 * 2
    assert kinds["attention, sliding 4"].elements_per_layer == 3 * 2 * 1 * 16
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    cache = transformers.DynamicCache(config=model.config)
    with torch.no_grad():
        model(torch.randint(1, 100, (2, 9)), use_cache=True, cache=cache)
    for block in (layer.temporal_block for layer in model.model.layers[:2]):
        state, conv = block.rg_lru.recurrent_states, block.conv1d_state
        assert (state.numel() // 2, state.element_size(), conv.numel() // 2) == (64, 4, 3 * 64)
    layer = cache.layers[2]
    assert (layer.keys.numel() + layer.values.numel()) // 2 == kinds["attention, sliding 4"].elements_per_layer


def test_a_griffin_recurrent_block_flops_against_flop_counter() -> None:
    # Its matmuls a token: the three projections (2 · 3 · 64 · 64) and the gates' two block-diagonal
    # products (2 · 2 · 4 · 16 · 16), FlopCounterMode's for a decoded token; the conv (2 · 64 · 4) and
    # the recurrence run elementwise there.
    from torch.utils.flop_counter import FlopCounterMode

    config = _griffin()
    mixer = _layout(config).spec.mixer
    assert mixer.projection_flops == 2 * 3 * 64 * 64 + 2 * 2 * 4 * 16 * 16 and mixer.conv_flops == 2 * 64 * 4
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    cache = transformers.DynamicCache(config=model.config)
    with torch.no_grad():
        model(torch.randint(1, 100, (1, 8)), use_cache=True, cache=cache)
        with FlopCounterMode(display=False) as counter:
            model(torch.randint(1, 100, (1, 1)), position_ids=torch.tensor([[8]]), use_cache=True, cache=cache)
    counts = {name.removeprefix("RecurrentGemmaForCausalLM.model."): sum(c.values()) for name, c in counter.get_flop_counts().items()}
    assert counts["layers.0.temporal_block"] == mixer.projection_flops
    assert mixer.decode_flops() == mixer.conv_flops  # the recurrence: no matmul


def _dbrx() -> dict[str, Any]:
    keys = {"d_model": 64, "n_heads": 4, "n_layers": 2, "vocab_size": 128, "max_seq_len": 64,
            "attn_config": {"kv_n_heads": 2, "rope_theta": 10000, "clip_qkv": 8},
            "ffn_config": {"ffn_hidden_size": 96, "moe_num_experts": 4, "moe_top_k": 2}}  # fmt: skip
    return {**transformers.AutoConfig.for_model("dbrx", **keys).to_dict(), "model_type": "dbrx"}


def test_dbrx_norms_around_attention_and_flat_experts() -> None:
    # DBRX's layer wraps its attention in norm_attn_norm (norm_1, attn, norm_2), its experts are
    # w1, v1 and w2 of [4 · 96, 64] each in one module: read as attention with its two norms and
    # a MoE of 4 gated experts × 96, top-2. FlopCounterMode's experts on 5 tokens: each token's 2
    # experts, three 64 × 96 matmuls each; the router 2 · 64 · 4 a token; the attention keeps K and V
    # of every token, 2 KV heads × 16, as transformers' cache does.
    config = _dbrx()
    layout = _counts_the_whole_build(config)
    ffn = layout.spec.moe_ffn
    assert ffn is not None and (ffn.experts, ffn.d_ff, ffn.top_k, ffn.expert_variant) == (4, 96, 2, "swiglu")
    from ffn_cli.services.costs import context_limit

    assert context_limit(config, layout.spec) == 64  # its max_seq_len: the longest context a verdict searches to
    assert layout.spec.norms_per_layer == 2
    counts = module_flops(config, torch.randint(1, 100, (1, 5)))
    assert counts["DbrxForCausalLM.transformer.blocks.0.ffn.experts"] == 5 * 2 * 3 * 2 * 64 * 96
    assert counts["DbrxForCausalLM.transformer.blocks.0.ffn.router"] == 5 * 2 * 64 * 4  # its decoder is "transformer"
    assert 5 * layout.spec.ffn_matmul_flops(ffn) == counts["DbrxForCausalLM.transformer.blocks.0.ffn"]
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, 7)
    assert kind.elements_per_layer == 7 * 2 * 2 * 16
    cache = _cache_after(config, 7)
    assert [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers] == [kind.elements_per_layer] * 2


def test_conv1d_projections_are_read_as_linears() -> None:
    # GPT-SW3 is GPT-2's architecture: c_attn, c_proj, c_fc as transformers' Conv1D ([in, out]
    # weights). Read as Linears of their shape: one fused qkv of 3 · 64, a 256-wide FFN, each a
    # Linear's weight (quantized as one); FlopCounterMode's c_fc and c_proj on 5 tokens, 2 · 2 · 64 · 256 a token.
    config = _config("gpt-sw3", n_embd=64, n_layer=2, n_head=4, n_inner=256, n_positions=64)
    layout = _counts_the_whole_build(config)
    ffn = layout.spec.ffn_of(0)
    assert ffn is not None and ffn.d_ff == 256 and (layout.spec.attention.n_heads, layout.spec.attention.n_kv_heads) == (4, 4)
    counts = module_flops(config, torch.randint(1, 100, (1, 5)))
    prefix = "GPT2LMHeadModel.transformer.h.0.mlp"
    assert counts[f"{prefix}.c_fc"] + counts[f"{prefix}.c_proj"] == 5 * 2 * 2 * 64 * 256 == 5 * layout.spec.ffn_matmul_flops(ffn)


def test_gpt_neo_local_layers_are_sliding_windows() -> None:
    # GPT-Neo's attention wraps the module that holds its projections; its local layers' mask keeps
    # each query's window_size latest keys, itself included (causal XOR tril(−window)): a window of
    # 8, whose 7 latest keys decoding needs, 4 heads × 16 for K and for V. transformers' cache keeps
    # every key (9 after 9 tokens) in both kinds; the global layer needs them all.
    config = {**transformers.AutoConfig.for_model("gpt_neo", hidden_size=64, num_layers=2, num_heads=4, window_size=8, vocab_size=128,
              attention_types=[[["global", "local"], 1]], max_position_embeddings=64).to_dict(), "model_type": "gpt_neo"}  # fmt: skip
    layout = _counts_the_whole_build(config)
    assert layout.windows == (None, 8) and not layout.left_out
    kinds = {str.__str__(k.kind): k for k in decode_state(layout.spec, layout.windows, layout.chunks, 9)}
    assert kinds["attention"].elements_per_layer == 9 * 2 * 4 * 16
    assert kinds["attention, sliding 8"].elements_per_layer == 7 * 2 * 4 * 16
    cache = _cache_after(config, 9)
    assert [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers] == [9 * 2 * 4 * 16] * 2


def test_a_config_of_several_text_models_is_refused_in_one_line(tmp_path: Any) -> None:
    # MusicGen holds a text encoder and a decoder: which one is the model is not ffn's to choose.
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**transformers.AutoConfig.for_model("musicgen").to_dict(), "model_type": "musicgen"}))
    for args in (["--gpu", "h200"], []):
        result = CliRunner().invoke(app, ["params", "--config", str(path), *args])
        assert result.exit_code == 1 and "more than one text model" in result.output and "Traceback" not in result.output
        # the sub-configs named, transformers' advice to coders left out; no count by building offered, which fails alike
        assert "(text_encoder, decoder)" in result.output and "get_text_config" not in result.output
        assert "counts it by building" not in result.output


_BERT_SMALL = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, vocab_size=128,
                   max_position_embeddings=64, is_decoder=True)  # fmt: skip


@pytest.mark.parametrize("model_type", ["bert", "camembert", "roberta-prelayernorm", "megatron-bert", "roformer", "big_bird"])
def test_bert_kin_as_decoders(model_type: str) -> None:
    # BERT's layer splits its attention (attention.self's query, key, value; attention.output's dense)
    # and its FFN (intermediate.dense up, output.dense down) over wrappers, each with its LayerNorm
    # (Megatron-BERT's and RoBERTa-PreLayerNorm's before, BERT's after): read as one attention of 4
    # heads × 16 and one GELU FFN 96 wide. FlopCounterMode's up and down projections on 5 tokens are
    # 2 · 2 · 64 · 96 a token; transformers' cache keeps K and V of every token, 4 heads × 16.
    keys = {"attention_type": "original_full"} if model_type == "big_bird" else {}
    config = {**transformers.AutoConfig.for_model(model_type, **_BERT_SMALL, **keys).to_dict(), "model_type": model_type}
    layout = _counts_the_whole_build(config)
    ffn = layout.spec.ffn_of(0)
    act = "gelu_tanh" if model_type == "big_bird" else "gelu"  # BigBird's gelu_new
    assert ffn is not None and (ffn.variant, ffn.d_ff, ffn.bias) == (act, 96, True)
    assert (layout.spec.attention.n_heads, layout.spec.attention.n_kv_heads, layout.spec.attention.head_dim) == (4, 4, 16)
    counts = module_flops(config, torch.randint(1, 100, (1, 5)))
    ups = {n: c for n, c in counts.items() if n.endswith(("0.intermediate.dense", "0.output.dense")) and "attention" not in n}
    assert len(ups) == 2 and sum(ups.values()) == 5 * 2 * 2 * 64 * 96 == 5 * layout.spec.ffn_matmul_flops(ffn)
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, 7)
    assert kind.elements_per_layer == 7 * 2 * 4 * 16
    cache = _cache_after(config, 7)
    layers = getattr(cache, "self_attention_cache", cache).layers
    assert [(layer.keys.numel() + layer.values.numel()) // 2 for layer in layers] == [kind.elements_per_layer] * 2


@pytest.mark.parametrize(("model_type", "pad"), [("camembert", 1), ("xlm-roberta-xl", 1), ("roberta", 5), ("bert", 0)])
def test_the_context_limit_is_the_longest_input_the_model_runs(tmp_path: Any, model_type: str, pad: int) -> None:
    # RoBERTa's positions start past its padding row (fairseq's): of 64 position rows, a token reads
    # 64 - (pad + 1) of them. transformers' own model runs that many tokens and fails on one more;
    # BERT's start at row 0. Read from the layout (CamemBERT, XLM-R XL) and from the reader (RoBERTa,
    # BERT).
    import json

    from tests.helpers import cli_json

    config = {**transformers.AutoConfig.for_model(model_type, **_BERT_SMALL, pad_token_id=pad).to_dict(), "model_type": model_type}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    limit = cli_json("params", "--config", str(path), "--gpu", "h200", "--no-cache")["per_gpu_memory"]["context_limit"]
    assert limit == 64 - (pad + 1 if model_type != "bert" else 0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    with torch.no_grad():
        model(torch.randint(pad + 1, 100, (1, limit)))
        with pytest.raises((IndexError, RuntimeError)):  # past the position table's last row
            model(torch.randint(pad + 1, 100, (1, limit + 1)))


@pytest.mark.parametrize("model_type", ["kimi_linear", "bailing_hybrid"])
def test_a_context_limit_named_model_max_length(tmp_path: Any, model_type: str) -> None:
    # Kimi-Linear's and Ling's files name the longest context model_max_length, which their config
    # classes read as max_position_embeddings: the limit the verdict stops at.
    from tests.helpers import cli_json

    config = transformers.AutoConfig.for_model(model_type)
    data = config.to_dict()
    assert "max_position_embeddings" not in data and data["model_max_length"] == config.max_position_embeddings > 0
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**data, "model_type": model_type}))
    answer = cli_json("params", "--config", str(path), "--gpu", "h200", "--tp", "8", "--seq-len", "4096")
    assert answer["per_gpu_memory"]["context_limit"] == config.max_position_embeddings


@pytest.mark.parametrize(
    ("model_type", "keys", "why"),
    [
        ("roformer", {}, "built as an encoder's"),  # no is_decoder: every token attends to the ones after it
        # ProphetNet: its cross-attention is cross_attn, not encoder_attn, and its self-attention predicts
        # n-gram streams beside the main one: neither read
        ("prophetnet", {}, "ffn cannot lay out layer 0 of prophetnet: 2 token mixers in one layer (self_attn, cross_attn)"),
        # IDEFICS: a gated cross-attention layer over the image every cross_layer_interval layers, beside them
        ("idefics", {}, "it builds layers that attend beside its decoder layers (model.gated_cross_attn_layers)"),
    ],
)
def test_what_a_decoder_layout_cannot_hold_is_refused_by_name(tmp_path: Any, model_type: str, keys: dict[str, Any], why: str) -> None:
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**transformers.AutoConfig.for_model(model_type, **keys).to_dict(), "model_type": model_type}))
    result = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--no-cache"])
    assert result.exit_code == 1 and why in " ".join(result.output.split()) and "Traceback" not in result.output


# CPM-Ant of 64 wide: 2 layers of 4 heads × 16 and a GEGLU FFN of 128 (w_in.w_0 its gate, w_in.w_1 its input,
# w_out), RMS norms; 4 soft-prompt tokens of 32 prompt types before every sequence.
_CPMANT = dict(hidden_size=64, num_attention_heads=4, dim_head=16, dim_ff=128, num_hidden_layers=2, vocab_size=256, prompt_length=4)


def _cpmant() -> dict[str, Any]:
    return {**transformers.AutoConfig.for_model("cpmant", **_CPMANT).to_dict(), "model_type": "cpmant"}


def test_cpmants_layout_against_the_whole_build() -> None:
    # By hand: the token table of 256 rows and its 32 × 4 prompt rows, 32 segment rows, the position
    # bias (32² segment pairs + 512 buckets, a column a head); per layer q, k, v, o (64 × 64 each), w_0,
    # w_1 (64 → 128) and w_out (128 → 64), two norms; the final norm; the head (256 × 64).
    layout = _counts_the_whole_build(_cpmant())
    assert layout.prefix_tokens == 4
    ffn = layout.spec.ffn_of(0)
    assert ffn is not None and (ffn.variant, ffn.d_ff) == ("geglu", 128) and layout.spec.norm == "rmsnorm"
    hand = (256 + 32 * 4) * 64 + 32 * 64 + (32 * 32 + 512) * 4 + 2 * (4 * 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64 + 256 * 64
    assert count_model(layout.spec).total_params == hand
    assert "soft-prompt tokens before every sequence" in " ".join(layout.notes)


@pytest.mark.parametrize("context", [1, 6])
def test_cpmants_soft_prompt_is_in_its_cache_against_transformers(context: int) -> None:
    # After a forward of `context` tokens each layer keeps K and V of them and of the 4 prompt tokens.
    config = _cpmant()
    layout = _layout(config)
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, context + layout.prefix_tokens)
    cache = _cache_after(config, context)
    held = [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers]  # 2 sequences
    assert held == [kind.elements_per_layer] * 2 == [(context + 4) * 2 * 4 * 16] * 2


def test_cpmants_soft_prompt_runs_through_every_layer_against_flop_counter() -> None:
    # FlopCounterMode over 5 tokens: each layer's projections and FFN run 5 + 4 tokens, the head 5.
    config = _cpmant()
    layout = _layout(config)
    counted = module_flops(config, torch.randint(1, 100, (1, 5)))
    layer = {n.rpartition("layers.0.")[2]: f for n, f in counted.items() if "layers.0." in n}
    projections = sum(layer[f"self_att.self_attention.{p}"] for p in ("project_q", "project_k", "project_v", "attention_out"))
    assert projections == 9 * layout.spec.attention_flops_of(0)
    assert layer["ffn.ffn"] == 9 * layout.spec.ffn_matmul_flops(layout.spec.ffn_of(0))
    (head,) = [f for n, f in counted.items() if n.endswith("lm_head")]
    assert head == 5 * 2 * 64 * 256


def test_a_length_within_cpmants_soft_prompt_is_refused(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from ffn_cli.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_cpmant()))
    alone_and_side_by_side = (["--gpu", "h200", "--seq-len", "4"], ["--seq-len", "2,100"], ["--preset", "gpt2", "--seq-len", "3"])
    for args in alone_and_side_by_side:
        result = CliRunner().invoke(app, ["params", "--config", str(path), *args])
        assert result.exit_code == 2 and "soft-prompt tokens" in result.output and "Traceback" not in result.output
    fits = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--seq-len", "5", "--json"])
    assert fits.exit_code == 0, fits.output
    # 1 sequence of 5 tokens, 4 of them the prompt's: 2 layers of K and V, 4 heads × 16, 2 B each
    answer = json.loads(fits.stdout)
    assert answer["per_gpu_memory"]["kv_cache_bytes"] == 5 * 2 * 2 * 4 * 16 * 2 and answer["layout"]["prefix_tokens"] == 4


@pytest.mark.parametrize("context", [4, 10])
def test_a_config_window_slides_every_layer_as_transformers_cache_does(context: int) -> None:
    # Moshi's attention names no window; its config's sliding_window (6 here) with no layer_types makes
    # transformers' DynamicCache keep each layer's 5 latest keys and values once the context passes them.
    config = _config("moshi", sliding_window=6, max_position_embeddings=64)
    layout = _layout(config)
    assert set(layout.windows) == {6}
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, context)
    cache = _cache_after(config, context)
    held = [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers]  # 2 sequences
    assert held == [kind.elements_per_layer] * 2 == [min(context, 5) * 2 * 2 * 16] * 2


# Kyutai STT of 64 wide: 2 layers of 4 heads × 16, a gated MLP of 96; a text vocabulary of 100 and 2 audio
# codebooks of 33 codes, every step's text token and codes summed from one table (embed_tokens.embed_tokens)
_KYUTAI = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, head_dim=16, ffn_dim=192,
               vocab_size=100, num_codebooks=2, codebook_vocab_size=33, sliding_window=6, max_position_embeddings=64,
               pad_token_id=3, audio_pad_token_id=166)  # fmt: skip


@pytest.mark.parametrize("context", [4, 10])
def test_kyutai_stt_against_the_whole_build_and_its_cache(context: int) -> None:
    # Its input embeddings are a wrapper of one table: the vocabulary's 100 rows the token embeddings, the
    # codebooks' 2 × 33 (+ 1 padding row) a table beside them; its cache slides at the config's window.
    config = {**transformers.AutoConfig.for_model("kyutai_speech_to_text", **_KYUTAI).to_dict(), "model_type": "kyutai_speech_to_text"}
    layout = _counts_the_whole_build(config)
    parts = {p.name: p for p in count_model(layout.spec).parts}
    assert parts["token embeddings"].params == 100 * 64 and parts["lookup tables beside the layers"].params == 67 * 64
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, context)
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(transformers.AutoConfig.for_model(**config)).eval().requires_grad_(False)
    with torch.no_grad():  # a step is the text token and each codebook's code
        cache = model(input_ids=torch.randint(0, 30, (2, context, 3)), use_cache=True).past_key_values
    held = [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers]  # 2 sequences
    assert held == [kind.elements_per_layer] * 2 == [min(context, 5) * 2 * 4 * 16] * 2


def test_what_the_model_as_built_leaves_out_is_beside_the_checkpoint_bytes(tmp_path: Any) -> None:
    # transformers builds Kyutai STT as its base model: no LM head, no Mimi codec (codec_config). The
    # memory's checkpoint is the built model's bytes, and says it is without them.
    config = {**transformers.AutoConfig.for_model("kyutai_speech_to_text", **_KYUTAI).to_dict(), "model_type": "kyutai_speech_to_text"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    from tests.helpers import cli_json

    memory = cli_json("params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--seq-len", "8")["per_gpu_memory"]
    assert memory["not_built"] == ["lm_head", "codec_config"]


def test_a_head_named_otherwise_or_listed_first_is_the_head() -> None:
    # BioGPT's head is output_projection, tied to the embeddings: transformers' get_output_embeddings
    # names it. CamemBERT's lm_head comes before its embeddings, so the one tied tensor is listed under
    # the head's name. Both count the whole build (an untied head would be 128 × 64 more).
    camembert = {**transformers.AutoConfig.for_model("camembert", **_BERT_SMALL).to_dict(), "model_type": "camembert"}
    for config in (_config("biogpt", max_position_embeddings=64), camembert):
        assert _counts_the_whole_build(config).spec.tie_word_embeddings


def test_ctrl_reads_its_activation_from_the_module() -> None:
    # CTRL's FFN is nn.Sequential(Linear, ReLU, Linear) and its config names no activation: ReLU, as
    # built. Its Wq, Wk, Wv and dense are one attention of 4 heads × 16 (transformers' cache: K and V
    # of each of 7 tokens).
    config = _config("ctrl", n_embd=64, dff=96, n_layer=2, n_head=4, n_positions=64)  # its attention reads no num_key_value_heads
    layout = _counts_the_whole_build(config)
    ffn = layout.spec.ffn_of(0)
    assert ffn is not None and (ffn.variant, ffn.d_ff) == ("relu", 96)
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, 7)
    assert kind.elements_per_layer == 7 * 2 * 4 * 16
    cache = _cache_after(config, 7)
    assert [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers] == [kind.elements_per_layer] * 2


@pytest.mark.parametrize("shared", [0, 48])
def test_experts_named_experts_are_routed_whatever_their_class(shared: int) -> None:
    # GraniteMoeShared's routed experts are a GraniteMoeSharedExperts ("Shared" is the family's name):
    # 4 experts × 96, top-2, and a shared MLP of shared_intermediate_size beside them where it is set.
    config = _config("granitemoeshared", num_local_experts=4, num_experts_per_tok=2, shared_intermediate_size=shared)
    ffn = _counts_the_whole_build(config).spec.moe_ffn
    assert ffn is not None and (ffn.experts, ffn.d_ff, ffn.top_k, ffn.shared_d_ff or 0) == (4, 96, 2, shared)


def _xlstm() -> dict[str, Any]:
    # q and k 64 wide (qk_dim_factor 0.5), v 128: 4 heads of 16 and 32; chunks of 8. transformers'
    # xLSTMCache rounds qk_dim up to a multiple of 64, so the widths are multiples of 64 here.
    small = dict(hidden_size=128, embedding_dim=128, num_blocks=2, num_hidden_layers=2, num_heads=4, vocab_size=128, chunk_size=8,
                 pad_token_id=0)  # fmt: skip
    return {**transformers.AutoConfig.for_model("xlstm", **small).to_dict(), "model_type": "xlstm"}


def test_an_mlstm_memory_against_transformers() -> None:
    # xLSTM's blocks are built by num_blocks and take no layer index. Each mLSTM layer keeps per head a
    # 16 × 32 memory, a 16-wide normalizer and a stabilizer, in float32 (inference_state_dtype), as
    # transformers' xLSTMCache holds them after a forward; its FFN is proj_up_gate, proj_up, proj_down.
    config = _xlstm()
    layout = _counts_the_whole_build(config)
    mixer = layout.spec.mixer
    assert mixer is not None and mixer.state_sized and mixer.state_dtype_bytes == 4
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, 19)
    assert kind.elements_per_layer == mixer.recurrent_state_elements == 4 * (16 * 32 + 16 + 1)
    ffn = layout.spec.ffn_of(0)
    assert ffn is not None and ffn.variant == "swiglu"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    with torch.no_grad():
        cache = model(torch.randint(1, 100, (1, 19)), use_cache=True).cache_params
    assert [sum(t.numel() for t in cache.rnn_state[i]) for i in range(2)] == [kind.elements_per_layer] * 2
    assert {t.dtype for i in range(2) for t in cache.rnn_state[i]} == {torch.float32}


@pytest.mark.parametrize("tokens", [19, 16, 5])
def test_an_mlstm_flops_against_flop_counter(tokens: int) -> None:
    # transformers' native kernels: whole chunks of 8 in parallel, the tokens past them one by one
    # (19 = 2 chunks + 3; 16 = 2 chunks; 5 < a chunk); one decoded token after them, in its recurrent
    # form. FlopCounterMode over the layer: every projection and the memory's matmuls.
    from torch.utils.flop_counter import FlopCounterMode

    config = _xlstm()
    mixer = _layout(config).spec.mixer
    assert mixer is not None
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    layer = model.backbone.blocks[0].mlstm_layer
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        _out, state = layer(torch.randn(1, tokens, 128))
    assert counted.get_total_flops() == tokens * (mixer.projection_flops + mixer.sequence_flops(tokens))
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        layer(torch.randn(1, 1, 128), state)
    assert counted.get_total_flops() == mixer.projection_flops + mixer.decode_flops()


def _inkling() -> dict[str, Any]:
    # A sliding layer (window 8, 4 KV heads) and a full one (2 KV heads), heads of 16, MoE of 4 experts
    # × 32, top-2, and 2 shared experts held as [2, 32, 64] tensors, which the router scores too.
    small = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16, swa_num_attention_heads=4,
                 swa_num_key_value_heads=4, swa_head_dim=16, sliding_window_size=8, d_rel=4, rel_extent=16, moe_intermediate_size=32,
                 n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=2, vocab_size=128, pad_token_id=0,
                 layer_types=["hybrid_sliding", "hybrid"])  # fmt: skip
    return {**transformers.AutoConfig.for_model("inkling_text", **small).to_dict(), "model_type": "inkling_text"}


def test_short_convolutions_beside_attention_against_transformers() -> None:
    # Inkling convolves its keys and values (k_sconv, v_sconv: 4 taps over each KV channel) and the
    # residual stream before the attention and before the FFN (attn_sconv, mlp_sconv: 4 taps over 64
    # channels), all kept in float32 (_keep_in_fp32_modules_strict). Decoding keeps each one's 3
    # latest inputs beside the cache; transformers' cache holds 4 (the newest too), in float32.
    config = _inkling()
    layout = _counts_the_whole_build(config)
    sliding, full = layout.spec.attention_of(0), layout.spec.attention_of(1)
    assert (sliding.kv_conv, sliding.kv_conv_bytes, full.kv_conv) == (4, 4, 4)
    # By hand: q, k, v, r and o (r: 4 heads × d_rel 4), and 4 taps over each K and V channel.
    assert sliding.projection_flops_per_token() == 2 * 64 * (64 + 64 + 64) + 2 * 64 * 64 + 2 * 4 * (64 + 64)
    kinds = {str.__str__(k.kind): k for k in decode_state(layout.spec, layout.windows, layout.chunks, 12)}
    assert kinds["attention, sliding 8"].elements_per_layer == 7 * 2 * 4 * 16 + 3 * 2 * 64
    assert kinds["attention"].elements_per_layer == 12 * 2 * 2 * 16 + 3 * 2 * 32
    assert kinds["short convolutions"].elements_per_layer == 3 * 2 * 64 and kinds["short convolutions"].conv_bytes == 4
    assert kinds["attention"].bytes_per_layer(2) == 12 * 2 * 2 * 16 * 2 + 3 * 2 * 32 * 4
    moe = layout.spec.moe_ffn
    assert moe is not None and (moe.experts, moe.d_ff, moe.top_k, moe.shared_experts, moe.shared_d_ff) == (4, 32, 2, 2, 32)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    with torch.no_grad():
        cache = model(torch.randint(1, 100, (1, 12)), use_cache=True).past_key_values
    held = [(layer.keys.numel() + layer.values.numel()) for layer in cache.layers]
    convs = [[cache.get_conv_state(i, state_idx=j) for j in range(4)] for i in range(2)]
    assert held == [7 * 2 * 4 * 16, 12 * 2 * 2 * 16]
    assert [sum(c.numel() * 3 // 4 for c in layer[:2]) for layer in convs] == [3 * 2 * 64, 3 * 2 * 32]
    assert [sum(c.numel() * 3 // 4 for c in layer[2:]) for layer in convs] == [3 * 2 * 64] * 2
    assert {c.dtype for layer in convs for c in layer} == {torch.float32}


def test_relative_position_logits_are_named_as_left_out(tmp_path: Any) -> None:
    # Inkling's rel_logits_proj: each query's relative states against every distance, a matmul no
    # projection counts; named under the roofline, never counted as something else, and not under
    # the memory verdict, which FLOPs do not touch.
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    layout = _layout(_inkling())
    assert any("relative-position logits" in str(m) for m in layout.flops_left_out)
    assert not any("relative-position logits" in str(m) for m in layout.left_out)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_inkling()))
    args = ["params", "--config", str(path), "--gpu", "h200", "--no-cache"]
    text = CliRunner().invoke(app, args).output
    assert "the roofline leaves out: layer" in text and "the verdict leaves out" not in text
    data = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert any("relative-position logits" in m for m in data["roofline"]["left_out"])
    assert "left_out" not in data["per_gpu_memory"]


def _inkling2() -> dict[str, Any]:
    # Six layers of 64: four sliding (window 4) and two full, each 4 heads × 16 over 2 KV heads; an
    # LM head of 120 rows beside a table of 128 (unpadded_vocab_size); blocks of two layers for the
    # attention residuals; MoE of 4 experts × 32, top-2.
    small = dict(vocab_size=128, unpadded_vocab_size=120, hidden_size=64, num_hidden_layers=6, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, swa_num_attention_heads=4, swa_num_key_value_heads=2, swa_head_dim=16,
                 sliding_window_size=4, rel_extent=8, d_rel=4, moe_intermediate_size=32, n_routed_experts=4, num_experts_per_tok=2,
                 n_layers_per_attn_res_block=2, layer_types=["hybrid_sliding", "hybrid_sliding", "hybrid"] * 2)  # fmt: skip
    return {**transformers.AutoConfig.for_model("inkling2_text", **small).to_dict(), "model_type": "inkling2_text"}


def test_inkling2_wrapped_projections_and_dynamic_convolutions_against_transformers() -> None:
    # Inkling 2 wraps each projection's Linear with a norm, a convolution or a gate (q_proj.linear,
    # k_proj.linear with k_proj.sconv after it); its full layers' key and value convolutions are
    # dynamic (static taps [4, 32] plus taps a weight_proj projects from each token). Decoding keeps
    # each convolution's 3 latest inputs in float32, the residual stream's two as well, beside K and
    # V of the window's 3 tokens (sliding) or of every token (full); transformers' cache after a
    # forward in bfloat16 holds 4 (the newest too), every one in float32.
    config = _inkling2()
    layout = _counts_the_whole_build(config)
    spec = layout.spec
    sliding, full = spec.attention_of(0), spec.attention_of(2)
    assert (sliding.kv_conv, sliding.kv_conv_bytes, full.kv_conv, full.kv_conv_bytes) == (4, 4, 4, 4)
    assert spec.head_rows == 120 and spec.vocab_size == 128
    kinds = {str.__str__(k.kind): k for k in decode_state(spec, layout.windows, layout.chunks, 11)}
    assert kinds["attention, sliding 4"].elements_per_layer == 3 * 2 * 2 * 16 + 3 * 2 * 32
    assert kinds["attention"].bytes_per_layer(2) == 11 * 2 * 2 * 16 * 2 + 3 * 2 * 32 * 4
    assert kinds["short convolutions"].elements_per_layer == 3 * 2 * 64 and kinds["short convolutions"].conv_bytes == 4
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config), dtype=torch.bfloat16).eval()
    with torch.no_grad():
        cache = model(torch.randint(1, 100, (1, 11)), use_cache=True).past_key_values
    held = [layer.keys.numel() + layer.values.numel() for layer in cache.layers]
    assert held == [3 * 2 * 2 * 16, 3 * 2 * 2 * 16, 11 * 2 * 2 * 16] * 2
    convs = [[cache.get_conv_state(i, state_idx=j) for j in range(4)] for i in range(6)]
    assert [sum(c.numel() * 3 // 4 for c in layer[:2]) for layer in convs] == [3 * 2 * 32] * 6
    assert [sum(c.numel() * 3 // 4 for c in layer[2:]) for layer in convs] == [3 * 2 * 64] * 6
    assert {c.dtype for layer in convs for c in layer} == {torch.float32}
    assert model.lm_head.weight.shape[0] == spec.head_rows


def test_inkling2_residual_convolutions_are_whole_on_each_gpu(tmp_path: Any) -> None:
    # Under --tp 2 each GPU keeps half of the KV heads' keys, values and their convolutions' windows,
    # but the convolutions over the residual stream whole: every rank holds the residual stream.
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_inkling2()))
    args = ["params", "--config", str(path), "--gpu", "h200", "--tp", "2", "--phase", "decode", "--seq-len", "11", "--json", "--no-cache"]
    data = json.loads(CliRunner().invoke(app, args).stdout)
    sliding = 4 * (3 * 2 * 2 * 16 * 2 + 3 * 2 * 32 * 4)  # 4 layers: 3 tokens' K and V at 2 B, the convolutions' windows at 4 B
    full = 2 * (11 * 2 * 2 * 16 * 2 + 3 * 2 * 32 * 4)
    residual = 6 * 2 * 3 * 64 * 4  # 6 layers, two convolutions of 64 channels, 3 inputs each at 4 B
    assert data["per_gpu_memory"]["kv_cache_bytes"] == (sliding + full) // 2 + residual
    assert "one over the residual stream whole" in data["per_gpu_memory"]["counted"]


def test_inkling2_tensors_some_layers_hold_are_counted_in_those_layers() -> None:
    # Layer 0 has no attention_input; the full layers' reads three queries ([3, 64]) and they norm
    # the keys' and values' inputs apart from the queries' (two norms more than a sliding layer):
    # each set a part of its own, in its layers, held to each built layer's tensors.
    config = _inkling2()
    spec = _layout(config).spec
    beside = {e.layers: e for e in spec.extras if e.per_layer}
    assert set(beside) == {(0,), (1, 3, 4), (2, 5)}
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    for layers, part in beside.items():
        layer = model.model.layers[layers[0]]
        own = sum(p.numel() for n, p in layer.named_parameters() if n.startswith(("attention_input", "mlp_input", "k_input", "v_input")))
        assert part.params_each == own
    assert spec.norms_per_layer == 2
    assert any("Inkling2BlockAttentionResidual" in str(m) for m in _layout(config).flops_left_out)


def _zaya() -> dict[str, Any]:
    # Three layers of 64: 4 heads × 16 over 2 KV heads, convolutions of 2 and 3 taps over the 96
    # channels of the queries and keys; 4 experts × 32, top-1, and a skip expert in the router's
    # pool of 5, scored by an MLP over a 16-wide state.
    small = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128,
                 moe_intermediate_size=32, num_experts=4, num_experts_per_tok=1, router_hidden_size=16, cca_time0=2, cca_time1=3,
                 pad_token_id=0)  # fmt: skip
    return {**transformers.AutoConfig.for_model("zaya", **small).to_dict(), "model_type": "zaya"}


def test_zaya_compressed_convolutional_attention_against_transformers() -> None:
    # Zaya's CCA keeps K and V of every token, and beside them its convolutions' (2 − 1) + (3 − 1)
    # latest inputs of the 96 query and key channels and the last token's delayed value half (16):
    # transformers' cache after a forward in bfloat16 holds as much, at 2 B an element.
    config = _zaya()
    layout = _counts_the_whole_build(config)
    spec = layout.spec
    (kind,) = decode_state(spec, layout.windows, layout.chunks, 9)
    assert kind.elements_per_layer == 9 * 2 * 2 * 16 + 3 * 96 + 16
    assert (kind.conv, kind.recurrent) == (3 * 96, 16)  # "+ conv 288 + state 16"
    assert kind.bytes_per_layer(2) == 2 * kind.elements_per_layer
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config), dtype=torch.bfloat16).eval()
    with torch.no_grad():
        cache = model(torch.randint(1, 100, (1, 9)), use_cache=True).past_key_values
    for layer in cache.layers:
        assert sum(t.numel() for t in layer.conv_states.values()) == kind.conv
        assert sum(t.numel() for t in layer.recurrent_states.values()) == kind.recurrent
        states = [layer.keys, layer.values, *layer.conv_states.values(), *layer.recurrent_states.values()]
        assert sum(t.numel() for t in states) == kind.elements_per_layer
        assert sum(t.numel() * t.element_size() for t in states) == kind.bytes_per_layer(2)


def test_zaya_flops_against_flop_counter() -> None:
    # FlopCounterMode on transformers' own modules, 5 tokens. The attention: q, k, the two value
    # halves and o (2 · 64 · (64 + 32 + 32) + 2 · 64 · 64 a token) and its convolutions (2 · 96 · 2
    # depthwise, 2 · 96 · 16 · 3 grouped); counted as ffn counts a token's, less the biases the
    # counter leaves out, plus what a pass with no cache runs beside its tokens: the depthwise
    # convolution over 3 − 1 more positions (the grouped one's reach) and the delayed value half
    # of one token of zeros. The router: down_proj, fc1, fc2 and out_proj, 2 · (64 · 16 + 2 · 16 · 16
    # + 16 · 5) a token, in place of a d × E router.
    from torch.utils.flop_counter import FlopCounterMode

    config = _zaya()
    spec = _layout(config).spec
    ffn = spec.moe_ffn
    assert ffn is not None and spec.router_in_extra and spec.zero_experts == 1 and spec.router_score_bias
    per_token = 2 * 64 * (64 + 32 + 32) + 2 * 64 * 64 + 2 * 96 * 2 + 96 + 2 * 96 * 16 * 3 + 96
    assert spec.attention_flops_of(1) == per_token
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    layer = model.model.layers[1]
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        layer.self_attn.qkv_proj(torch.randn(1, 5, 64), None)
        layer.self_attn.o_proj(torch.randn(1, 5, 64))
    assert counted.get_total_flops() == 5 * (per_token - 2 * 96) + 2 * (2 * 96 * 2) + 2 * 64 * 16
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        layer.mlp.gate(torch.randn(1, 5, 64), torch.randn(1, 5, 16))
    router = 2 * (64 * 16 + 2 * 16 * 16 + 16 * 5)
    assert counted.get_total_flops() == 5 * router
    assert spec.ffn_matmul_flops(ffn) == router + 2 * 3 * 64 * 32  # one expert, every pick a real one


def test_a_gate_held_in_the_up_projection_against_transformers() -> None:
    # Moshi's gating MLP: fc1 maps 64 to ffn_dim 192, its two halves the gate and the input; fc2 reads
    # 96. Its layer class asks beside the config which kind it is (use_flexible_linear), which the
    # model building it says: its layers are read as the model built them.
    config = _config("moshi", ffn_dim=192)
    layout = _counts_the_whole_build(config)
    ffn = layout.spec.dense_ffn
    assert ffn is not None and (ffn.d_ff, ffn.fused_gate_up, ffn.variant) == (96, True, "swiglu")
    counts = module_flops(config, torch.zeros(1, 1, dtype=torch.long))
    assert counts["layers.0.mlp"] == layout.spec.ffn_matmul_flops(ffn) == 2 * 64 * 192 + 2 * 96 * 64
    # K and V of each of 5 tokens, 2 KV heads × 16: transformers' cache holds as much a layer.
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, 5)
    assert kind.elements_per_layer == 5 * 2 * 2 * 16
    cache = _cache_after(config, 5)
    assert [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers] == [kind.elements_per_layer] * 2
    # MoshiForCausalLM builds the text model alone: the depth decoder and the audio codec the config describes are named.
    said = " ".join(map(str, layout.notes))
    assert "depth_decoder_config (moshi_depth) describes a part transformers' MoshiForCausalLM does not build" in said
    assert "audio_encoder_config (mimi) describes a part" in said


def test_a_tower_at_the_models_root_keeps_its_tables() -> None:
    # Kosmos-2.5: its vision_model (row and column tables of 4,096 positions, as many as the text takes) and
    # image_to_text_projection sit at the model's root, its head inside text_model: the tower holds its
    # tables, the text model no learned positions, and its final norm is the text model's.
    config = {**transformers.AutoConfig.for_model("kosmos-2.5").to_dict(), "model_type": "kosmos-2.5"}
    layout = _counts_the_whole_build(config)
    with torch.device("meta"):
        built = transformers.AutoModelForImageTextToText.from_config(transformers.AutoConfig.for_model(**config))
    tower = sum(p.numel() for m in (built.vision_model, built.image_to_text_projection) for p in m.parameters())
    assert layout.spec.vision is not None and layout.spec.vision.params == tower and layout.spec.max_positions == 0
    assert layout.spec.final_norm and layout.spec.norm == "layernorm"


def test_a_towers_norm_built_before_the_text_model_is_the_towers() -> None:
    # MOSS-Transcribe-Diarize builds its Whisper-like audio tower (a LayerNorm of 1,024 at its end)
    # before its Qwen3 text model (d_model 1,024): the final norm is the text model's RMSNorm, the
    # tower's is the tower's.
    config = {**transformers.AutoConfig.for_model("moss_transcribe_diarize").to_dict(), "model_type": "moss_transcribe_diarize"}
    layout = _counts_the_whole_build(config)
    spec = layout.spec
    assert spec.final_norm and spec.norm == "rmsnorm" and spec.norm_params == 1024
    with torch.device("meta"):
        built = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    # The audio tower and its projector: the model's part that runs on audio, never active for a text token.
    tower = sum(p.numel() for m in (built.model.audio_tower, built.model.multi_modal_projector) for p in m.parameters())
    assert spec.vision is not None and spec.vision.runs_on == {"audio"} and spec.vision.params == tower
    counted = count_model(spec)
    assert counted.text_params == counted.total_params - tower
    # Its head is tied to the token table: read and run once a token all the same (its causal-LM class holds it).
    assert spec.lm_head and spec.tie_word_embeddings and built.lm_head.weight is built.get_input_embeddings().weight
    layer = built.model.language_model.layers[0]
    linears = sum(m.weight.numel() for m in layer.modules() if isinstance(m, torch.nn.Linear))
    assert counted.matmul_flops_per_token == 2 * (28 * linears + built.lm_head.weight.numel())


def _ernie_vl() -> tuple[Any, dict[str, Any]]:
    # 512 wide: its 3-D rotary sections are sized for heads of 128.
    text = dict(hidden_size=512, intermediate_size=96, moe_intermediate_size=[32, 16], moe_num_experts=4, moe_k=2,
                moe_num_shared_experts=1, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
                mlp_layer_types=["dense", "sparse"])  # fmt: skip
    built = transformers.AutoConfig.for_model("ernie4_5_vl_moe", text_config=text, vision_config=dict(depth=1))
    return built, {**built.to_dict(), "model_type": "ernie4_5_vl_moe"}


def test_experts_of_the_image_tokens_beside_the_text_ones_against_transformers() -> None:
    # ERNIE 4.5 VL's MoE layer: text_moe (4 experts × 32, top-2) and vision_moe (4 × 16, a router
    # of its own) side by side, and a shared expert of 32. A text token runs the text experts and
    # the shared one: FlopCounterMode on transformers' block over 3 text tokens is ffn's count.
    from torch.utils.flop_counter import FlopCounterMode

    built, config = _ernie_vl()
    layout = _counts_the_whole_build(config)
    spec = layout.spec
    ffn = spec.moe_ffn
    assert ffn is not None and (ffn.experts, ffn.d_ff, ffn.top_k, ffn.shared_d_ff) == (4, 32, 2, 32)
    (image,) = (e for e in spec.extras if e.kind == "vision")
    # The vision experts' gate_up [4, 32, 512] and down [4, 512, 16], their router (4, 512) and its score bias (1, 4).
    assert image.params_each == 4 * (32 * 512 + 512 * 16) + 4 * 512 + 4 and spec.layers_of(image) == (1,) and image.flops == 0
    model = transformers.AutoModelForImageTextToText.from_config(built, experts_implementation="eager").eval().requires_grad_(False)
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        model.model.language_model.layers[1].mlp(torch.randn(1, 3, 512))
    assert counted.get_total_flops() == 3 * spec.ffn_matmul_flops(ffn) == 3 * 2 * (2 * 3 * 512 * 32 + 3 * 512 * 32 + 512 * 4)
    # Active by hand: the table (tied head), 2 attentions (q and o 512², k and v 512 × 256), layer 0's MLP
    # of 96, layer 1's router and score bias, 2 of its text experts and the shared one, 5 norms of 512.
    counted_model = count_model(spec)
    by_hand = 128 * 512 + 2 * (2 * 512 * 512 + 2 * 512 * 256) + 3 * 512 * 96 + (4 * 512 + 4 + 3 * 3 * 512 * 32) + 5 * 512
    assert counted_model.active_params == by_hand
    # The vision part: the tower, its resampler and layer 1's vision MoE, as transformers builds them.
    vision = (model.model.vision_tower, model.model.resampler_model, model.model.language_model.layers[1].mlp.vision_moe)
    assert counted_model.vision_params == sum(p.numel() for m in vision for p in m.parameters())


def test_experts_of_the_image_tokens_are_divided_over_ep() -> None:
    # --ep 2 on one GPU's share: the text and the vision experts alike, half a GPU each; their router whole.
    _built, config = _ernie_vl()
    layout = read_layout(config, name="small", source="small")
    memory = costs_data(model_costs(layout, "bfloat16", CostOptions(gpu="h200", ep=2, tp=1)))["per_gpu_memory"]
    experts = 4 * 3 * 512 * 32 + 4 * (32 * 512 + 512 * 16)  # the text experts' gate, up and down; the vision ones'
    assert memory["expert_bytes"] == 2 * experts // 2


def test_a_latent_moe_against_transformers() -> None:
    # Muse Spark's MoE: pre_expert_proj 64 → 32 and its norm, 4 experts of 16 in the latent of 32 (top-2), one
    # post_expert_norm every expert's output goes through, post_expert_proj 32 → 64; its layers slide (a window
    # of 4) and attend in full by turns.
    from torch.utils.flop_counter import FlopCounterMode

    text = dict(hidden_size=64, intermediate_size=96, moe_hidden_size=32, moe_intermediate_size=16, num_local_experts=4,
                num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                vocab_size=128, sliding_window=4, layer_types=["sliding_attention", "full_attention"],
                mlp_layer_types=["sparse", "sparse"])  # fmt: skip
    small = dict(vision_config=dict(num_hidden_layers=1, hidden_size=32, intermediate_size=64, num_attention_heads=2),
                 audio_config=dict(num_hidden_layers=1, out_hidden_size=64, patch_sizes=[16], hidden_sizes=[32], depths=[1]),
                 out_hidden_size=64, projector_hidden_size=32)  # fmt: skip
    built = transformers.AutoConfig.for_model("muse_spark", text_config=text, **small)
    config = {**built.to_dict(), "model_type": "muse_spark"}
    layout = _counts_the_whole_build(config)
    ffn = layout.spec.moe_ffn
    assert ffn is not None and (ffn.latent, ffn.d_ff, ffn.experts, ffn.top_k) == (32, 16, 4, 2) and layout.windows == (4, None)
    torch.manual_seed(0)
    model = transformers.AutoModelForImageTextToText.from_config(built, experts_implementation="eager").eval().requires_grad_(False)
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        model.model.language_model.layers[0].mlp(torch.randn(1, 3, 64))
    # A token: down and up through the latent, the router, and 2 experts' gate_up (32 → 2 · 16) and down (16 → 32).
    per_token = 2 * 64 * 32 + 2 * 32 * 64 + 2 * 64 * 4 + 2 * (2 * 32 * 32 + 2 * 16 * 32)
    assert counted.get_total_flops() == 3 * layout.spec.ffn_matmul_flops(ffn) == 3 * per_token
    # K and V of 2 KV heads × 16: the sliding layer the 3 latest tokens', the full layer all 9.
    kinds = {str.__str__(k.kind): k.elements_per_layer for k in decode_state(layout.spec, layout.windows, layout.chunks, 9)}
    assert kinds == {"attention, sliding 4": 3 * 2 * 2 * 16, "attention": 9 * 2 * 2 * 16}
    with torch.no_grad():
        cache = model(input_ids=torch.randint(1, 100, (2, 9)), use_cache=True).past_key_values
    # a batch of 2: half of what it holds is one sequence's K and V
    assert [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers] == [
        kinds["attention, sliding 4"],
        kinds["attention"],
    ]


def _qwen4_exp() -> tuple[Any, dict[str, Any]]:
    # Qwen4-Exp: Gated DeltaNet in 3 of 4 layers, QSA-indexed attention in the fourth, 2 residual-stream
    # copies, and a PLE in layer 1 (ple_layer_ids counts from 1): an n-gram table of (2 orders − 1) · 2
    # hashed heads, projections and a convolution of 4 taps dilated by the n-gram size, 3.
    text = dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=1, head_dim=16, vocab_size=128,
                eos_token_id=1, layer_types=["linear_attention"] * 3 + ["indexed_attention"], linear_num_value_heads=4,
                linear_num_key_heads=2, linear_key_head_dim=16, linear_value_head_dim=16, num_experts=4, num_experts_per_tok=2,
                moe_intermediate_size=16, shared_expert_intermediate_size=16, hc_count=2, hc_lowrank=8, indexer_budget=8,
                indexer_compress_ratio=2, indexer_head_dim=16, indexer_kv_heads=1, indexer_n_heads=2, ple_conv_kernel_size=4,
                ple_embed_dim=32, ple_layer_ids=[2], heads_per_ngram=2, make_ngram_vocab_size_divisible_by=8, ngram_size=3,
                ngram_vocab_size_base=31, rope_parameters={"rope_theta": 10000, "partial_rotary_factor": 0.5,
                "mrope_section": [1, 1, 2], "rope_type": "default"})  # fmt: skip
    built = transformers.AutoConfig.for_model("qwen4_exp_text", **text)
    return built, {**built.to_dict(), "model_type": "qwen4_exp_text"}


def test_a_layer_named_from_one_and_its_ngram_table_against_transformers() -> None:
    # Layer 1 alone holds the PLE (ple_layer_ids [2], from 1): built and read as a kind of its own,
    # the whole build counted. Its n-gram table is looked up, 4 rows a token, in the embeddings'
    # tier; its convolution keeps (4 − 1) · 3 inputs of its 2 · 64 channels, as transformers' cache does.
    from torch.utils.flop_counter import FlopCounterMode

    built, config = _qwen4_exp()
    layout = _counts_the_whole_build(config)
    spec = layout.spec
    (table,) = (e for e in spec.extras if e.kind == "embedding")
    (ple,) = (e for e in spec.extras if e.state)
    assert (table.layers, table.lookups, table.flops) == ((1,), 4, 0) and (ple.layers, ple.state) == ((1,), 3 * 3 * 128)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(built).eval().requires_grad_(False)
    ngrams = model.model.layers[1].ple.ple_embedding.ngram_embedding.weight.numel()
    counted = count_model(spec)
    assert table.params_each == ngrams and counted.active_without_embeddings == counted.active_params - 128 * 64 - ngrams
    with torch.no_grad():
        cache = model(torch.randint(2, 100, (2, 9)), use_cache=True).past_key_values
    kinds = {str.__str__(k.kind): k.elements_per_layer for k in decode_state(spec, layout.windows, layout.chunks, 9)}
    assert kinds["convolution beside the layer's parts"] == cache.layers[1].conv_states[1].numel() // 2
    # The QSA indexer keeps one key of 16 a token beside K and V (1 KV head × 16 each).
    assert kinds["QSA indexer"] == cache.layers[3].indexer_keys.numel() // 2 == 9 * 16
    assert kinds["attention"] == (cache.layers[3].keys.numel() + cache.layers[3].values.numel()) // 2
    # A token's work beside layer 1's parts: key_proj (32 → 128), value_proj (32 → 64), the convolution's
    # 2 · 128 · 4 (FlopCounterMode over 5 tokens), and the hyper-connections every layer runs.
    with torch.no_grad(), FlopCounterMode(display=False) as ran:
        model.model.layers[1].ple(torch.randn(1, 5, 128), torch.randint(2, 100, (1, 5)), None)
    (others,) = (e for e in spec.extras if e.kind == "other" and e.layers == (0, 2, 3))
    assert ran.get_total_flops() == 5 * (2 * 32 * 128 + 2 * 32 * 64 + 2 * 128 * 4) == 5 * (ple.flops - others.flops)
    # Its indexer scores blocks of 2 keys: half of 2 heads · 16 a key; attention reads its budget of 8 and the open block's 1.
    assert (spec.index_flops_per_key, spec.sparse_topk) == (2 * 2 * 16 // 2, 8 + 2 - 1)


def test_an_audio_tower_counted_by_building_is_no_tokens_work() -> None:
    # Qwen2-Audio counted by building it: its audio tower and projector are the tower part, named an
    # audio tower, out of the active count (a text token never runs them).
    config = {**transformers.AutoConfig.for_model("qwen2_audio").to_dict(), "model_type": "qwen2_audio"}
    counted = meta_build.count(config, name="x", source="x")
    (tower,) = (p for p in counted.parts if p.kind == "vision")
    with torch.device("meta"):
        built = transformers.AutoModel.from_config(transformers.AutoConfig.for_model(**config))
    held = sum(p.numel() for m in (built.audio_tower, built.multi_modal_projector) for p in m.parameters())
    assert (str.__str__(tower.name), tower.params) == ("audio tower", held)
    assert counted.active_params == counted.total_params - held


def test_a_numbered_list_beside_the_layers_is_said_once() -> None:
    # BLIP-2's Q-Former beside OPT's layers: its 12 layers said as one range, its layernorm not the final norm.
    config = {**transformers.AutoConfig.for_model("blip-2").to_dict(), "model_type": "blip-2"}
    layout = _counts_the_whole_build(config)
    beside = " ".join(holds for where, holds in layout.kinds if where == "beside")
    assert "qformer.encoder.layer.0–11" in beside and "qformer.encoder.layer.1." not in beside and "qformer.layernorm" in beside


def _rwkv() -> dict[str, Any]:
    small = dict(hidden_size=64, attention_hidden_size=64, intermediate_size=96, num_hidden_layers=2, vocab_size=128)
    return {**transformers.AutoConfig.for_model("rwkv", **small).to_dict(), "model_type": "rwkv"}


def test_rwkv_state_against_transformers() -> None:
    # RWKV-4: its block 0 alone holds pre_ln, over the embeddings (the embedding norm); each block's
    # time mixing keeps a numerator, denominator and maximum a channel in float32, and each of its
    # two token shifts (time mixing's, channel mixing's) the latest input a channel at the model's
    # dtype: transformers' state, five [batch, channels, layers] tensors, the last three float32.
    config = _rwkv()
    layout = _counts_the_whole_build(config)
    spec = layout.spec
    assert spec.embedding_norm and spec.norms_per_layer == 2
    assert spec.mixer is not None and (spec.mixer.recurrent_state_elements, spec.mixer.conv_state_elements) == (3 * 64, 2 * 64)
    (kind,) = decode_state(spec, layout.windows, layout.chunks, 7)
    assert kind.bytes_per_layer(2) == 3 * 64 * 4 + 2 * 64 * 2
    ffn = spec.ffn_of(0)
    assert ffn is not None and (ffn.variant, ffn.d_ff) == ("relu2", 96)  # its forward squares a ReLU
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval().to(torch.bfloat16)
    with torch.no_grad():
        state = model(torch.randint(1, 100, (1, 7)), use_cache=True).state
    assert sum(t[:, :, 0].numel() for t in state) == kind.elements_per_layer
    assert sum(t[:, :, 0].numel() * t.element_size() for t in state) == kind.bytes_per_layer(2)


def test_rwkv_flops_against_flop_counter() -> None:
    # A block's matmuls on 5 tokens: time mixing's key, value, receptance and output, channel
    # mixing's key and value (the FFN) and its receptance (d × d, beside the FFN's projections).
    from torch.utils.flop_counter import FlopCounterMode

    config = _rwkv()
    spec = _layout(config).spec
    ffn, mixer = spec.ffn_of(1), spec.mixer
    assert ffn is not None and mixer is not None
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        model.rwkv.blocks[1](torch.randn(1, 5, 64))
    beside = next(e for e in spec.extras if e.per_layer)  # the channel mixing's receptance, one layer's
    assert (
        counted.get_total_flops()
        == 5 * (mixer.projection_flops + spec.ffn_matmul_flops(ffn) + beside.flops)
        == 5 * 2 * 64 * (4 * 64 + 2 * 96 + 64)
    )


def test_a_model_that_never_attends_says_so(tmp_path: Any) -> None:
    # RWKV keeps a fixed state a sequence: the memory row says so, and --json has no stand-in attention.
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_rwkv()))
    args = ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--batch", "3", "--no-cache"]
    text = CliRunner().invoke(app, args).output
    assert "recurrent state: 3 sequences" in text and "KV cache: 3" not in text
    data = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert data["attention"] is None and data["per_gpu_memory"]["kv_cache_bytes"] == 3 * 2 * (3 * 64 * 4 + 2 * 64 * 2)


def test_an_attention_rows_conv_window_in_json(tmp_path: Any) -> None:
    # Inkling's full layer at 12 tokens: K and V of 12 tokens, 2 KV heads × 16, at 2 B, and its key and
    # value convolutions' 3 latest inputs of 32 + 32 channels at 4 B, each said apart in --json.
    import json

    from typer.testing import CliRunner

    from ffn_cli.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_inkling()))
    args = ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--seq-len", "12", "--json", "--no-cache"]
    kinds = {k["kind"]: k for k in json.loads(CliRunner().invoke(app, args).stdout)["decode_state"]["kinds"]}
    full = kinds["attention"]
    assert (full["conv_state_elements"], full["conv_bytes_per_element"]) == (3 * 2 * 32, 4)
    assert full["bytes_per_layer"] == 12 * 2 * 2 * 16 * 2 + 3 * 2 * 32 * 4


def _axk2() -> dict[str, Any]:
    keys = dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, kv_lora_rank=16, q_lora_rank=24,
                qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, index_head_dim=8, index_n_heads=2, index_topk=4,
                gated_norm_rank=4, vocab_size=128, mlp_layer_types=["dense", "sparse", "sparse"],
                layer_types=["indexed_attention"] * 3)  # fmt: skip
    return _config("axk2", **keys)


def test_a_latent_attention_with_gated_queries_and_gated_norms() -> None:
    # A.X K2: MLA whose q_gate_proj reads the query latent and its norm side by side (2 · 24) and writes
    # the queries and an output gate (4 heads × (16 + 8)); its norms gate their output through a
    # low-rank MLP (64 → 4 → 64): the one before attention in every layer, the one before a MoE in
    # the MoE layers. FlopCounterMode on 5 tokens: q_gate_proj 2 · 48 · 96 a token, each gate MLP
    # 2 · 2 · 64 · 4; transformers' cache keeps the latent and rotary key (16 + 8) and the indexer's key.
    config = _axk2()
    layout = _counts_the_whole_build(config)
    attention = layout.spec.attention
    assert attention.kind == "MLA" and attention.q_gate and attention.shape_data()["projections"]["q_gate_proj"] == [96, 48]
    gate = {t.name: t.shape for t in layout.spec.moe_extra if "layernorm" in t.name}
    assert gate == {"post_attention_layernorm.mlp.fc1.weight": (4, 64), "post_attention_layernorm.mlp.fc2.weight": (64, 4)}
    counts = module_flops(config, torch.randint(1, 100, (1, 5)))
    assert counts["layers.1.self_attn.q_gate_proj"] == 5 * 2 * 48 * 96
    for norm in ("input_layernorm", "post_attention_layernorm"):
        assert counts[f"layers.1.{norm}"] == 5 * 2 * 2 * 64 * 4
    assert "layers.0.post_attention_layernorm" not in counts  # the dense layer's plain norm
    assert 5 * layout.spec.extra_flops == sum(counts[f"layers.{i}.input_layernorm"] for i in range(3))  # beside the parts
    moe = layout.spec.moe_ffn
    assert counts["layers.1.mlp"] + counts["layers.1.post_attention_layernorm"] == 5 * layout.spec.ffn_matmul_flops(moe)
    latent, index = decode_state(layout.spec, layout.windows, layout.chunks, 7)
    layer = _cache_after(config, 7).layers[0]  # 2 sequences
    assert latent.elements_per_layer == 7 * (16 + 8) == (layer.keys.numel() + layer.values.numel()) // 2
    assert index.elements_per_layer == 7 * 8 == layer.indexer_keys.numel() // 2


def _modernbert_decoder() -> dict[str, Any]:
    small = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4, vocab_size=256, local_attention=8,
                 pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2,
                 layer_types=["full_attention", "sliding_attention", "sliding_attention", "full_attention"])  # fmt: skip
    return {**transformers.AutoConfig.for_model("modernbert-decoder", **small).to_dict(), "model_type": "modernbert-decoder"}


def test_a_first_layer_without_its_first_norm_against_transformers() -> None:
    # ModernBERT's decoder: layer 0 builds no attn_norm, the norm over the embeddings standing in
    # for it; its attention's out projection and its MLP's are both Wo, its MLP's gate and input
    # one Wi. Two full layers and two sliding ones of window 4 (local_attention 8, ±4 around a
    # token in the encoder; the decoder's causal half).
    config = _modernbert_decoder()
    layout = _counts_the_whole_build(config)
    spec = layout.spec
    assert spec.norms_per_layer == 2 and not spec.embedding_norm
    assert any("stands in for layer 0's first norm" in str(n) for n in layout.notes)
    ffn = spec.dense_ffn
    assert ffn is not None and (ffn.d_ff, ffn.fused_gate_up) == (96, True)
    rows = {str.__str__(r.kind): r for r in decode_state(spec, layout.windows, layout.chunks, 12)}
    cache = _cache_after(config, 12)
    held = [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers]  # a batch of 2
    full = [i for i, t in enumerate(config["layer_types"]) if t == "full_attention"]
    assert sum(held[i] for i in full) == rows["attention"].elements
    assert sum(h for i, h in enumerate(held) if i not in full) == sum(r.elements for k, r in rows.items() if k != "attention")


def _mllama(**vision: Any) -> dict[str, Any]:
    text = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                vocab_size=128, cross_attention_layers=[1], pad_token_id=0, bos_token_id=1, eos_token_id=2)  # fmt: skip
    config = transformers.AutoConfig.for_model("mllama", text_config=text, vision_config=vision or None, image_token_index=128)
    return {**config.to_dict(), "model_type": "mllama"}


# A vision tower small enough to run: 28-pixel tiles of 14-pixel patches, 2 tiles at most.
_SMALL_VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_global_layers=1, attention_heads=2, image_size=28,
                     patch_size=14, max_num_tiles=2, intermediate_layers_indices=[0], vision_output_dim=64,
                     supported_aspect_ratios=[[1, 1], [1, 2], [2, 1]])  # fmt: skip


def test_cross_attention_layers_keep_an_images_keys_and_values_against_transformers() -> None:
    # Llama 3.2 Vision: layer 1 attends to an image's tokens (MllamaCrossAttentionDecoderLayer), layers
    # 0 and 2 to the text's. The cross layer is a token mixer whose keys and values are the image's:
    # counted tensor by tensor (its q/k norms and both tanh gates with it), a text token running its
    # q_proj and o_proj and scoring the image's keys; a sequence keeps those keys and values for one
    # image of the most tiles, 2 tiles × (2² patches + the class token) = 10 tokens here, never
    # counted as attention over the text. The token table holds 8 rows past vocab_size, a table of its own.
    config = _mllama(**_SMALL_VISION)
    layout = _counts_the_whole_build(config)
    spec = layout.spec
    assert spec.mixer is not None and spec.mixer.layers == (1,) and spec.mixer.state_sized
    assert spec.attention_layers == (0, 2)
    assert any("more than one image of 2 tiles (10 tokens)" in str(m) for m in layout.left_out)
    (table,) = [e for e in spec.extras if e.kind == "embedding"]
    assert table.params_each == 8 * 64 and str(table.detail) == "model.embed_tokens (rows past vocab_size): (8, 64)"
    torch.manual_seed(0)
    hf_config = transformers.AutoConfig.for_model(**config)
    model = transformers.AutoModelForImageTextToText.from_config(hf_config, attn_implementation="eager").eval().requires_grad_(False)
    # FlopCounterMode on transformers' own cross-attention, one text token against the image's 10
    # tokens: its q_proj and o_proj, and the scores and weighted sum, are what a text token runs;
    # k_proj and v_proj run on the image's tokens, once an image.
    cross = model.model.language_model.layers[1].cross_attn
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        cross(hidden_states=torch.randn(1, 1, 64), cross_attention_states=torch.randn(1, 10, 64))
    by_module = {name: sum(counts.values()) for name, counts in counter.get_flop_counts().items()}
    projections = {n: by_module[f"MllamaTextCrossAttention.{n}"] for n in ("q_proj", "k_proj", "v_proj", "o_proj")}
    assert spec.mixer.projection_flops == projections["q_proj"] + projections["o_proj"]
    assert spec.mixer.decode_flops() == by_module["MllamaTextCrossAttention"] - sum(projections.values()) == 4 * 10 * 4 * 16
    # transformers' cache after 9 tokens and one image of 2 tiles: the text's layers keep K and V of
    # every token, the cross layer the image's 10 tokens' whatever the text's length.
    rows = {str.__str__(r.kind): r for r in decode_state(spec, layout.windows, layout.chunks, 9)}
    ids = torch.randint(3, 100, (1, 9))
    ids[0, 0] = 128  # the image's token
    cache = model(input_ids=ids, pixel_values=torch.randn(1, 1, 2, 3, 28, 28), aspect_ratio_ids=torch.tensor([[1]]),
                  aspect_ratio_mask=torch.ones(1, 1, 2, dtype=torch.long), cross_attention_mask=torch.ones(1, 9, 1, 2, dtype=torch.long),
                  use_cache=True).past_key_values  # fmt: skip
    held = [layer.keys.numel() + layer.values.numel() for layer in cache.layers]
    assert held[0] + held[2] == rows["attention"].elements
    image = rows["cross-attention over an image's tokens"]
    assert image.sized and image.elements == held[1] == 2 * 2 * 16 * 10
    # The roofline writes them once (prefill) and reads them each decoded token, never rewrites them.
    from ffn_cli.costs.roofline.model_pass import PassCase, mixer_cost
    from ffn_cli.costs.weights import plan_from_options

    plan = plan_from_options("bf16", None)
    for phase in ("prefill", "decode"):
        cost = mixer_cost(spec, plan, PassCase(phase, 3, 9))
        assert cost.kv_bytes == 3 * held[1] * 2
        # A text token reads q_proj, o_proj, q_norm and the two gates, never the image's k_proj, v_proj and k_norm.
        assert (
            cost.weight_params
            == sum(p.numel() for n, p in cross.named_parameters() if not n.startswith(("k_proj", "v_proj", "k_norm"))) + 2
        )


def test_cross_attention_without_a_tile_count_is_named_not_sized() -> None:
    # A config whose vision part gives no tile count (none at all: 0): what the cross layers keep is left out by name.
    config = _mllama(max_num_tiles=0, supported_aspect_ratios=[[1, 1]])
    layout = _counts_the_whole_build(config)
    assert layout.spec.mixer is not None and not layout.spec.mixer.state_sized
    assert any("keeps of an image's tokens" in str(m) for m in layout.left_out)
    rows = {str.__str__(r.kind): r for r in decode_state(layout.spec, layout.windows, layout.chunks, 9)}
    assert not rows["cross-attention over an image's tokens"].sized


# MiniMax-M3: a dense, full-attention first layer; then MSA layers whose indexer (2 heads × 8) scores
# every key and picks the top 2 blocks of 4 keys its attention reads; a vision tower beside them.
_M3_TEXT = dict(hidden_size=64, intermediate_size=32, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                vocab_size=128, num_local_experts=4, num_experts_per_tok=2, dense_intermediate_size=96, shared_intermediate_size=32,
                rotary_dim=8, index_n_heads=2, index_head_dim=8, index_block_size=4, index_topk_blocks=2, index_local_blocks=1,
                layer_types=["full_attention", "minimax_m3_sparse", "minimax_m3_sparse"], mlp_layer_types=["dense", "sparse", "sparse"],
                bos_token_id=1, eos_token_id=2)  # fmt: skip


def _minimax_m3() -> tuple[Any, dict[str, Any]]:
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    built = transformers.AutoConfig.for_model("minimax_m3_vl", text_config=_M3_TEXT, vision_config=vision, projector_hidden_size=64)
    return built, {**built.to_dict(), "model_type": "minimax_m3_vl"}


@pytest.mark.parametrize("context", [3, 19])
def test_minimax_m3s_indexer_keys_against_transformers(context: int) -> None:
    # Each MSA layer caches one key of 8 a token beside K and V (2 KV heads × 16 each); the full
    # layer caches K and V alone, as transformers' cache does after a forward of `context` tokens.
    built, config = _minimax_m3()
    layout = _counts_the_whole_build(config)
    spec = layout.spec
    assert (spec.index_layers, spec.full_read_layers, spec.index_key_width, spec.index_heads) == ((1, 2), (0,), 8, 2)
    assert (spec.sparse_topk, spec.index_select_block, spec.index_flops_per_key) == (2 * 4, 4, 2 * 2 * 8)
    torch.manual_seed(0)
    model = transformers.MiniMaxM3VLForCausalLM(built.text_config).eval().requires_grad_(False)
    with torch.no_grad():
        cache = model(torch.randint(3, 100, (2, context)), use_cache=True).past_key_values
    kinds = {str.__str__(k.kind): k for k in decode_state(spec, layout.windows, layout.chunks, context)}
    assert kinds["MSA indexer"].layers == 2
    assert [kinds["MSA indexer"].elements_per_layer] * 2 == [layer.idx_keys.numel() // 2 for layer in cache.layers[1:]]
    assert kinds["MSA indexer"].elements_per_layer == context * 8  # by hand
    assert getattr(cache.layers[0], "idx_keys", None) is None
    assert kinds["attention"].layers == 3
    assert {(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers} == {kinds["attention"].elements_per_layer}


def test_minimax_m3s_full_layer_reads_every_key() -> None:
    # Scores at 16 tokens, per token. Query i (from 0) reads i + 1 keys in the full layer (136 in all)
    # and min(i + 1, 8) in each MSA layer (36 + 8 · 8 = 100), 2 FLOPs × 4 heads × 16 (Q·K) and × 16
    # (V) = 256 a key; each MSA indexer scores all 136 keys, 2 FLOPs × 2 heads × 8 = 32 a key.
    from ffn_cli.models.seq_flops import flops_over_length, model_stack

    _built, config = _minimax_m3()
    layout = _layout(config)
    stack = model_stack(layout.spec, layout.windows, causal=True, chunks=layout.chunks)
    (row,) = flops_over_length(stack, (16,))
    assert row.scores * 16 == 256 * 136 + 2 * (256 * 100 + 32 * 136)


def test_minimax_m3s_indexer_keys_are_whole_on_every_gpu(tmp_path: Any) -> None:
    # Decoding 1 token at context 20, bf16. K and V (2 KV heads × 16 each, 64 a token): the full
    # layer reads all 21 and writes 1; an MSA layer its top 8 and writes 1, and its indexer's keys
    # (8 a token) are read, all 21, and written, 1. At --tp 2 each GPU keeps one KV head, half of K
    # and V, and every indexer key, as the memory holds them.
    from typer.testing import CliRunner

    from ffn_cli.cli import app

    _built, config = _minimax_m3()
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    means = []
    for tp in (1, 2):
        args = ["params", "--config", str(path), "--gpu", "h200", "--tp", str(tp), "--phase", "decode", "--seq-len", "20", "--json"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        means.append(json.loads(result.stdout)["roofline"]["cases"][0]["attention_one_layer_mean"]["kv_cache_bytes"])
    kv = {"full": 22 * 64 * 2, "sparse": 9 * 64 * 2}
    index = 22 * 8 * 2
    assert means[0] == pytest.approx((kv["full"] + 2 * (kv["sparse"] + index)) / 3)
    assert means[1] == pytest.approx((kv["full"] / 2 + 2 * (kv["sparse"] / 2 + index)) / 3)
