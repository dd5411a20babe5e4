"""An encoder-decoder laid out as its decoder, the encoder beside it as a tower (BART's kin, Whisper):
every total against transformers' own Seq2Seq model built on meta, what decoding keeps against
transformers' cache after a forward, a decoder layer's FLOPs a token against FlopCounterMode, and
the deployment answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.costs.decode_state import decode_state
from ffn_cli.models.count import count_model

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from ffn_cli.configs.encoder_decoder import seq2seq_class  # noqa: E402  (torch and transformers)
from ffn_cli.configs.layer_read import read_layout  # noqa: E402
from tests.helpers import cli_json  # noqa: E402

SEQ2SEQ = ("bart", "bigbird_pegasus", "blenderbot", "blenderbot-small", "led", "m2m_100", "marian", "mbart", "mvp", "pegasus", "plbart",
           "whisper")  # fmt: skip

# Whisper of 64 wide, 2 + 2 layers of 4 heads × 16, a source of 30 frames (60 mel frames through its stride-2 conv).
_WHISPER = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
                decoder_ffn_dim=96, num_mel_bins=8, vocab_size=100, max_source_positions=30, max_target_positions=40, pad_token_id=0,
                bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)  # fmt: skip
# BART of 64 wide, 2 + 3 layers of 4 heads × 16, at most 32 source tokens.
_BART = dict(d_model=64, encoder_layers=2, decoder_layers=3, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
             decoder_ffn_dim=96, vocab_size=100, max_position_embeddings=32, pad_token_id=0, bos_token_id=1, eos_token_id=2,
             decoder_start_token_id=2, forced_eos_token_id=2)  # fmt: skip


def _config(model_type: str, **keys: Any) -> dict[str, Any]:
    return {**transformers.AutoConfig.for_model(model_type, **keys).to_dict(), "model_type": model_type}


@pytest.mark.parametrize("model_type", SEQ2SEQ)
def test_every_parameter_once_against_the_seq2seq_model(model_type: str) -> None:
    # transformers' defaults, built whole on meta by the class that gives the model its head: the
    # total, and the encoder as the tower (every tensor of it but the token table it shares with the decoder).
    config = _config(model_type)
    layout = read_layout(config, name=model_type, source=model_type)
    found = seq2seq_class(model_type)
    assert found is not None
    with torch.device("meta"):
        model = found[0].from_config(transformers.AutoConfig.for_model(**config))
    counted = count_model(layout.spec)
    assert counted.total_params == sum(p.numel() for p in model.parameters())
    shared = model.get_input_embeddings().weight
    encoder = sum(p.numel() for p in model.get_encoder().parameters() if p is not shared)
    assert counted.vision_params == encoder
    assert counted.tower_params == {"audio" if model_type == "whisper" else "source": encoder}
    decoder = model.get_decoder()
    assert layout.spec.n_layers == len(decoder.layers) == config["decoder_layers"]
    assert layout.spec.mixer is not None and layout.spec.beside_attention == tuple(range(layout.spec.n_layers))


def _cache_after(model_type: str, keys: dict[str, Any], source: int, generated: int) -> Any:
    torch.manual_seed(0)
    hf = transformers.AutoConfig.for_model(model_type, **keys)
    found = seq2seq_class(model_type)
    assert found is not None
    model = found[0].from_config(hf).eval().requires_grad_(False)
    decoder_ids = torch.randint(3, 100, (1, generated))
    with torch.no_grad():
        if model_type == "whisper":  # 2 mel frames a source position
            out = model(input_features=torch.randn(1, keys["num_mel_bins"], 2 * source), decoder_input_ids=decoder_ids, use_cache=True)
        else:
            out = model(input_ids=torch.randint(3, 100, (1, source)), decoder_input_ids=decoder_ids, use_cache=True)
    return out.past_key_values


@pytest.mark.parametrize(("model_type", "keys", "source"), [("whisper", _WHISPER, 30), ("bart", _BART, 32)])
def test_what_decoding_keeps_against_transformers_cache(model_type: str, keys: dict[str, Any], source: int) -> None:
    # By hand: each decoder layer keeps K and V of 4 heads × 16 for every token decoded (its own
    # attention) and for every token of the source (its cross-attention), the source the most the encoder hands on.
    layout = read_layout(_config(model_type, **keys), name="small", source="small")
    generated = 12
    kinds = {str.__str__(k.kind): k for k in decode_state(layout.spec, layout.windows, layout.chunks, generated)}
    layers = keys["decoder_layers"]
    assert kinds["attention"].layers == layers and kinds["attention"].elements_per_layer == generated * 2 * 64
    cross = kinds["cross-attention over the encoder's output"]
    assert cross.layers == layers and cross.elements_per_layer == source * 2 * 64 and cross.source_tokens == source
    cache = _cache_after(model_type, keys, source, generated)
    for i in range(layers):
        own, other = cache.self_attention_cache.layers[i], cache.cross_attention_cache.layers[i]
        assert own.keys.numel() + own.values.numel() == kinds["attention"].elements_per_layer
        assert other.keys.numel() + other.values.numel() == cross.elements_per_layer


def test_a_decoder_layer_against_flop_counter() -> None:
    # One decoder layer run on 5 tokens against a source of 30: per token, q, k, v and o of its own
    # attention, q and o of its cross-attention and the FFN; the source's keys and values once (30 tokens
    # through k_proj and v_proj); the scores over 5 and 30 keys. The layout's per-token count is the first part.
    layout = read_layout(_config("whisper", **_WHISPER), name="small", source="small")
    spec = layout.spec
    hf = transformers.AutoConfig.for_model("whisper", **_WHISPER)
    model = transformers.AutoModelForSpeechSeq2Seq.from_config(hf, attn_implementation="eager").eval()
    layer = model.get_decoder().layers[0]
    tokens, source = 5, 30
    hidden, states = torch.randn(1, tokens, 64), torch.randn(1, source, 64)
    mask = torch.full((tokens, tokens), float("-inf")).triu(1)[None, None]
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        layer(hidden, attention_mask=mask, encoder_hidden_states=states)
    measured = counter.get_total_flops()
    mixer = spec.mixer
    assert mixer is not None and mixer.projection_flops == 2 * 2 * 64 * 64  # q_proj and out_proj
    assert spec.dense_ffn is not None
    per_token = spec.attention_flops_of(0) + mixer.projection_flops + spec.ffn_matmul_flops(spec.dense_ffn)
    scores = 2 * 2 * tokens * tokens * 64 + 2 * 2 * tokens * source * 64  # QKᵀ and AV over its own tokens and the source's
    biases = 64 + 64  # q_proj's and v_proj's, an add each, which the layout counts beside the projections and no matmul runs
    assert measured == tokens * (per_token - biases) + source * 2 * 2 * 64 * 64 + scores


def test_the_deployment_answer(tmp_path: Path) -> None:
    path = tmp_path / "whisper.json"
    path.write_text(json.dumps(_config("whisper", **_WHISPER)))
    args = ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--tp", "2", "--batch", "1"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # The decoder's context is its max_target_positions: 40 tokens, K and V of 4 heads × 16 in 2 layers; the source's
    # 30 beside them; half of each a GPU (2 of its 4 heads), 2 bytes.
    memory = data["per_gpu_memory"]
    assert memory["kv_cache_bytes"] == 2 * 2 * (40 + 30) * 2 * 64 // 2
    kinds = {k["kind"]: k for k in data["decode_state"]["kinds"]}
    cross = kinds["cross-attention over the encoder's output"]
    assert cross["encoder_tokens"] == 30 and cross["conv_state_elements"] is None and cross["recurrent_state_elements"] is None
    assert memory["context"] == memory["context_limit"] == 40
    # The encoder, counted whole beside the decoder as a tower is: every tensor transformers builds in it.
    with torch.device("meta"):
        built = transformers.AutoModelForSpeechSeq2Seq.from_config(transformers.AutoConfig.for_model("whisper", **_WHISPER))
    assert data["vision_params"] == sum(p.numel() for p in built.get_encoder().parameters())
    # Two all-reduces of one token's 64 values a layer for its attentions, one for its FFN: 2 layers.
    comm = data["roofline"]["cases"][0]["communication"]
    assert comm["model_bytes_sent"] == pytest.approx(2 * 3 * 2 * (1 / 2) * 64 * 2)
    text = " ".join(CliRunner().invoke(app, args, env={"COLUMNS": "80"}).output.split())
    assert "a source of 30 tokens (max_source_positions)" in text and "audio: model.encoder" in text
    assert "the roofline leaves out: the encoder's pass over a source (model.encoder)" in text
    # Beside another model, the footnote names the encoder, not a vision tower.
    side = " ".join(CliRunner().invoke(app, ["params", "--config", str(path), "--preset", "gpt2"], env={"COLUMNS": "120"}).output.split())
    assert "the total includes its encoder" in side and "vision tower" not in side


def test_an_encoder_decoder_no_seq2seq_class_builds_is_named() -> None:
    from ffn_cli.configs.encoder_decoder import encoder_decoder_of
    from ffn_cli.i18n import Message

    said = encoder_decoder_of(transformers.AutoConfig.for_model("gpt2", is_encoder_decoder=True))
    assert isinstance(said, Message) and "that no Seq2Seq class of transformers builds" in str(said)
    assert encoder_decoder_of(transformers.AutoConfig.for_model("gpt2")) is None
    whisper = encoder_decoder_of(transformers.AutoConfig.for_model("whisper", **_WHISPER))
    assert not isinstance(whisper, Message) and whisper is not None
    assert (whisper.decoder_layers, whisper.source_tokens, whisper.source_key, whisper.runs_on) == (2, 30, "max_source_positions", "audio")


def test_the_encoder_is_split_over_tp_and_stored_as_the_decoder(tmp_path: Path) -> None:
    # As vLLM serves Whisper: the encoder's attention and FFN linears split over --tp (and stored as
    # --weights stores the decoder's), its tables as the decoder's are; its convolutions whole on every
    # GPU, as the norms and biases are. By transformers' own modules: every 1-D tensor and the
    # encoder's convs replicated; every other matrix halved at --tp 2.
    path = tmp_path / "whisper.json"
    path.write_text(json.dumps(_config("whisper", **_WHISPER)))
    with torch.device("meta"):
        model = transformers.AutoModelForSpeechSeq2Seq.from_config(transformers.AutoConfig.for_model("whisper", **_WHISPER))
    encoder = model.get_encoder()
    whole = {id(p) for p in (encoder.conv1.weight, encoder.conv2.weight)}
    replicated = sum(p.numel() for p in model.parameters() if p.dim() == 1 or id(p) in whole)
    split = sum(p.numel() for p in model.parameters()) - replicated
    data = json.loads(CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--tp", "2", "--json"]).stdout)
    memory = data["per_gpu_memory"]
    assert memory["replicated_bytes"] == 2 * replicated and memory["split_bytes"] == 2 * split // 2
    assert "vision tower" not in memory["replicated"] and "the encoder's other tensors" in memory["replicated"]
    # --weights fp8 on the linears: the encoder's too, an fp32 scale a tensor beside each.
    stored = json.loads(CliRunner().invoke(app, ["params", "--config", str(path), "--weights", "fp8", "--json"]).stdout)
    matrices = [p for n, p in model.named_parameters() if p.dim() == 2 and "embed" not in n]  # 20 the decoder's, 12 the encoder's
    linears = sum(p.numel() for p in matrices)
    total = sum(p.numel() for p in model.parameters())
    assert stored["checkpoint"]["bytes"] == 2 * (total - linears) + linears + 4 * len(matrices)


def test_a_decoder_with_its_own_vocabulary(tmp_path: Path) -> None:
    # Marian with separate vocabularies: the decoder's table and head are decoder_vocab_size rows.
    keys = dict(d_model=64, encoder_layers=1, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
                decoder_ffn_dim=96, vocab_size=100, decoder_vocab_size=120, share_encoder_decoder_embeddings=False, pad_token_id=0,
                decoder_start_token_id=0, max_position_embeddings=32)  # fmt: skip
    layout = read_layout(_config("marian", **keys), name="small", source="small")
    with torch.device("meta"):
        model = transformers.AutoModelForSeq2SeqLM.from_config(transformers.AutoConfig.for_model("marian", **keys))
    assert layout.spec.vocab_size == 120 and count_model(layout.spec).total_params == sum(p.numel() for p in model.parameters())


def test_trace_runs_a_decoder_layers_ffn(tmp_path: Path) -> None:
    # BART's and Whisper's FFN is fc1, the activation and fc2, held loose in the decoder layer: the three traced as one.
    path = tmp_path / "whisper.json"
    path.write_text(json.dumps(_config("whisper", **_WHISPER)))
    result = CliRunner().invoke(app, ["trace", "--config", str(path), "--layer", "1", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["module"]["name"] == "decoder.layers.1.(fc1, activation_fn, fc2)"
    tokens = data["batch"] * data["seq_len"]
    assert data["matmul_flops"] == tokens * 2 * 2 * 64 * 96 and data["total_params"] == 2 * 64 * 96 + 96 + 64
    assert data["output_shape"] == data["input_shape"]
    # its decoder's 2 layers, not the encoder's
    refused = CliRunner().invoke(app, ["trace", "--config", str(path), "--layer", "2"])
    assert refused.exit_code == 2 and "layers 0 to 1" in refused.output


def test_a_token_runs_the_decoder_less_the_sources_keys_and_values() -> None:
    # Active: the decoder's every tensor but its cross-attentions' k_proj and v_proj, which project the
    # source once (the encoder, run once a source, is no token's either). By transformers' modules.
    layout = read_layout(_config("whisper", **_WHISPER), name="small", source="small")
    with torch.device("meta"):
        model = transformers.AutoModelForSpeechSeq2Seq.from_config(transformers.AutoConfig.for_model("whisper", **_WHISPER))
    decoder = model.get_decoder()
    source_kv = sum(p.numel() for n, p in decoder.named_parameters() if ".encoder_attn.k_proj." in n or ".encoder_attn.v_proj." in n)
    assert count_model(layout.spec).active_params == sum(p.numel() for p in decoder.parameters()) - source_kv


# T5Gemma of 64 wide: its encoder's and decoder's own configs, 2 and 3 layers of 4 heads × 16, 2 KV heads,
# sliding windows of 8 in every other layer, at most 32 source tokens (its encoder's max_position_embeddings).
_T5GEMMA_HALF = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                     vocab_size=100, sliding_window=8, max_position_embeddings=32)  # fmt: skip


def test_t5gemmas_decoder_from_its_own_config_against_transformers_cache() -> None:
    config = _config("t5gemma", encoder=dict(_T5GEMMA_HALF), decoder=dict(_T5GEMMA_HALF, num_hidden_layers=3), vocab_size=100)
    layout = read_layout(config, name="small", source="small")
    model = transformers.AutoModelForSeq2SeqLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    assert count_model(layout.spec).total_params == sum(p.numel() for p in model.parameters())
    assert layout.spec.n_layers == 3 and layout.windows == (8, None, 8)
    # By hand at --source-len 20 and 6 tokens decoded: K and V of 2 KV heads × 16 a token, in each of 3 layers
    spec = layout.spec.with_source_tokens(20)
    kinds = {str.__str__(k.kind): k for k in decode_state(spec, layout.windows, layout.chunks, 6)}
    assert kinds["cross-attention over the encoder's output"].elements_per_layer == 20 * 2 * 32
    assert sum(k.elements for k in kinds.values()) == 3 * (6 + 20) * 2 * 32
    with torch.no_grad():
        cache = model(
            input_ids=torch.randint(1, 100, (1, 20)), decoder_input_ids=torch.randint(1, 100, (1, 6)), use_cache=True
        ).past_key_values
    held = [
        layer.keys.numel() + layer.values.numel() for c in (cache.self_attention_cache, cache.cross_attention_cache) for layer in c.layers
    ]
    assert sum(held) == sum(k.elements for k in kinds.values())
    note = " ".join(str(n) for n in layout.notes)
    assert "a source of 32 tokens (encoder.max_position_embeddings)" in note


def test_t5gemmas_context_is_its_decoders(tmp_path: Path) -> None:
    config = _config("t5gemma", encoder=dict(_T5GEMMA_HALF), decoder=dict(_T5GEMMA_HALF, max_position_embeddings=24), vocab_size=100)
    path = tmp_path / "t5gemma.json"
    path.write_text(json.dumps(config))
    memory = cli_json("params", "--config", str(path), "--gpu", "h200", "--phase", "decode")["per_gpu_memory"]
    assert memory["context_limit"] == memory["context"] == 24  # the decoder's max_position_embeddings, in its own config


def _t5gemma2() -> dict[str, Any]:
    # T5Gemma 2 of 64 wide: a multimodal encoder (a vision tower of 1 layer, 4 tokens an image) and a decoder
    # of 2 layers, 4 heads × 16 over 2 KV heads, the first sliding (window 4); one token table of 300 rows,
    # the decoder's and the encoder's, tied to the head.
    default = transformers.AutoConfig.for_model("t5gemma2").to_dict()
    text = dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                head_dim=16, sliding_window=4, layer_types=["sliding_attention", "full_attention"], query_pre_attn_scalar=16,
                max_position_embeddings=64)  # fmt: skip
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=32, patch_size=8)
    encoder = {**default["encoder"], "text_config": {**default["encoder"]["text_config"], **text},
               "vision_config": {**default["encoder"]["vision_config"], **vision}, "mm_tokens_per_image": 4,
               "boi_token_index": 290, "eoi_token_index": 291, "image_token_index": 292}  # fmt: skip
    return _config("t5gemma2", encoder=encoder, decoder={**default["decoder"], **text}, vocab_size=300, image_token_index=292,
                   eoi_token_index=291)  # fmt: skip


@pytest.mark.parametrize(("source", "decoded"), [(5, 3), (7, 9)])
def test_t5gemma2s_merged_attention_against_transformers_cache(source: int, decoded: int) -> None:
    # Each decoder layer's one attention (q, k, v, o) reads its own tokens and the encoder's output
    # together: a cross-attention holding no tensor of its own, keeping the source's K and V beside the
    # layer's own (the sliding layer's 3 latest, the full layer's every token).
    config = _t5gemma2()
    layout = read_layout(config, name="small", source="small")
    model = transformers.AutoModelForSeq2SeqLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    assert count_model(layout.spec).total_params == sum(p.numel() for p in model.parameters())
    spec = layout.spec.with_source_tokens(source)
    kinds = {str.__str__(k.kind): k for k in decode_state(spec, layout.windows, layout.chunks, decoded)}
    cross = kinds["cross-attention over the encoder's output, through the layer's own attention"]
    assert (cross.layers, cross.elements_per_layer) == (2, source * 2 * 2 * 16)
    with torch.no_grad():
        cache = model(
            input_ids=torch.randint(3, 250, (1, source)), decoder_input_ids=torch.randint(3, 250, (1, decoded)), use_cache=True
        ).past_key_values
    own = [layer.keys.numel() + layer.values.numel() for layer in cache.self_attention_cache.layers]
    assert own == [min(decoded, 3) * 64, decoded * 64]
    assert [layer.keys.numel() + layer.values.numel() for layer in cache.cross_attention_cache.layers] == [cross.elements_per_layer] * 2
    assert sum(own) + 2 * cross.elements_per_layer == sum(k.elements for k in kinds.values())


def _image_to_text(model_type: str) -> dict[str, Any]:
    # Florence-2 (a DaViT tower, then BART), UDOP (T5's kin over a page's tokens and layout) and Pix2Struct
    # (a ViT over patches, then T5's kin) of 64 wide:
    # 2 decoder layers of 4 heads × 16, their decoder depth named in the text config (decoder_layers).
    config = transformers.AutoConfig.for_model(model_type).to_dict()
    if model_type == "florence2":
        config["text_config"].update(
            dict(
                vocab_size=200,
                d_model=64,
                encoder_layers=2,
                decoder_layers=2,
                encoder_attention_heads=4,
                decoder_attention_heads=4,
                encoder_ffn_dim=96,
                decoder_ffn_dim=96,
                max_position_embeddings=64,
            )
        )
        config["vision_config"].update(dict(embed_dim=[16, 32, 48, 64], depths=[1, 1, 1, 1], num_heads=[1, 2, 3, 4],
                                            num_groups=[1, 2, 3, 4], projection_dim=64))  # fmt: skip
        config["image_token_id"] = 199
    elif model_type == "pix2struct":  # its text block's sublayers by name, T5's parts in them (query … output, wi_0, wi_1, wo)
        config["text_config"].update(dict(vocab_size=200, hidden_size=64, d_kv=16, d_ff=96, num_layers=2, num_heads=4))
        config["vision_config"].update(dict(hidden_size=64, d_kv=16, d_ff=96, num_hidden_layers=1, num_attention_heads=4,
                                            patch_embed_hidden_size=48))  # fmt: skip
    else:
        config.update(dict(vocab_size=200, d_model=64, d_kv=16, d_ff=96, num_layers=2, num_decoder_layers=2, num_heads=4,
                           relative_bias_args=[{"type": "1d"}]))  # fmt: skip
    return _config(model_type, **{k: v for k, v in config.items() if k != "model_type"})


@pytest.mark.parametrize("model_type", ["florence2", "udop", "pix2struct"])
def test_an_image_to_text_encoder_decoder_against_transformers_cache(model_type: str) -> None:
    # transformers builds them by AutoModelForImageTextToText: laid out as their decoder, the encoder and
    # the vision tower beside it; at --source-len 6 and 5 tokens decoded each layer keeps K and V of both.
    config = _image_to_text(model_type)
    layout = read_layout(config, name="small", source="small")
    model = transformers.AutoModelForImageTextToText.from_config(transformers.AutoConfig.for_model(**config)).eval()
    assert count_model(layout.spec).total_params == sum(p.numel() for p in model.parameters()) and layout.spec.n_layers == 2
    assert not any("is not counted" in note for note in layout.notes)  # Pix2Struct's vision model is its encoder, counted
    kinds = {str.__str__(k.kind): k for k in decode_state(layout.spec.with_source_tokens(6), layout.windows, layout.chunks, 5)}
    assert (kinds["attention"].elements_per_layer, kinds["cross-attention over the encoder's output"].elements_per_layer) == (640, 768)
    given: dict[str, Any] = dict(input_ids=torch.randint(3, 150, (1, 6)), decoder_input_ids=torch.randint(3, 150, (1, 5)), use_cache=True)
    if model_type == "udop":
        given["bbox"] = torch.zeros(1, 6, 4, dtype=torch.long)  # each token's box on the page
    if model_type == "pix2struct":  # 6 patches, each its row and column, then its 48 values
        patches = torch.randn(1, 6, 2 + 48)
        patches[:, :, :2] = torch.randint(1, 5, (1, 6, 2)).float()
        decoded = given["decoder_input_ids"]
        given = dict(flattened_patches=patches, attention_mask=torch.ones(1, 6), decoder_input_ids=decoded, use_cache=True)
    with torch.no_grad():
        cache = model(**given).past_key_values
    assert [layer.keys.numel() + layer.values.numel() for layer in cache.self_attention_cache.layers] == [640, 640]
    assert [layer.keys.numel() + layer.values.numel() for layer in cache.cross_attention_cache.layers] == [768, 768]


def test_a_donut_style_decoder_is_as_deep_as_its_decoder_layers() -> None:
    # A vision-encoder-decoder of Donut's kind: a Swin encoder before an MBart decoder of 2 layers, whose
    # num_hidden_layers names its encoder_layers (4). Laid out as the 2 it builds; 64 patches kept as the source.
    encoder = transformers.AutoConfig.for_model("donut-swin", embed_dim=32, depths=[1, 1], num_heads=[2, 4], image_size=64, patch_size=4,
                                                window_size=4)  # fmt: skip
    decoder = transformers.AutoConfig.for_model("mbart", d_model=64, encoder_layers=4, decoder_layers=2, encoder_attention_heads=4,
                                                decoder_attention_heads=4, encoder_ffn_dim=96, decoder_ffn_dim=96, vocab_size=200,
                                                max_position_embeddings=64, is_decoder=True, add_cross_attention=True)  # fmt: skip
    built = transformers.VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    layout = read_layout({**built.to_dict(), "model_type": "vision-encoder-decoder"}, name="small", source="small")
    model = transformers.AutoModelForImageTextToText.from_config(built).eval()
    assert layout.spec.n_layers == 2 and count_model(layout.spec).total_params == sum(p.numel() for p in model.parameters())
    with torch.no_grad():
        out = model(pixel_values=torch.randn(1, 3, 64, 64), decoder_input_ids=torch.randint(3, 150, (1, 5)), use_cache=True)
    cache = out.past_key_values
    kinds = {str.__str__(k.kind): k for k in decode_state(layout.spec.with_source_tokens(64), layout.windows, layout.chunks, 5)}
    # transformers' cache holds empty slots past the 2 layers (its config's num_hidden_layers): the filled ones
    filled = [[layer.keys.numel() + layer.values.numel() for layer in c.layers if layer.keys is not None]
              for c in (cache.self_attention_cache, cache.cross_attention_cache)]  # fmt: skip
    assert filled == [[kinds["attention"].elements_per_layer] * 2, [64 * 2 * 64] * 2]
    assert kinds["cross-attention over the encoder's output"].elements_per_layer == 64 * 2 * 64


@pytest.mark.parametrize("model_type", ["marian", "pegasus", "bart", "blenderbot-small"])
def test_a_sinusoidal_position_table_is_said_fixed(model_type: str) -> None:
    # Built on the CPU, a sinusoidal table holds sin and cos of each position: row 0 is all 0s and 1s,
    # every value within [-1, 1]; a learned one is drawn at random. The parts table says which.
    layout = read_layout(_config(model_type, **_BART), name=model_type, source=model_type)
    torch.manual_seed(0)
    model = transformers.AutoModelForSeq2SeqLM.from_config(transformers.AutoConfig.for_model(model_type, **_BART))
    table = model.get_decoder().embed_positions.weight.detach()
    sinusoidal = bool(set(table[0].tolist()) <= {0.0, 1.0} and table.abs().max() <= 1)
    assert layout.spec.fixed_positions is sinusoidal
    row = next(p for p in count_model(layout.spec).parts if p.name == "position embeddings")
    assert ("fixed: sinusoidal, not learned" in row.detail) is sinusoidal
