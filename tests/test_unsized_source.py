"""Decoders over an encoder's output of a length the config does not say: T5 and its kin (relative
positions, no most source), laid out from their blocks' sublayers (configs/layer_read/shell.py), and
TrOCR's decoder alone. Without --source-len what the cross-attention keeps and scores is named as
left out, never counted as none; with it, held to transformers' own cache after a forward. Totals
against the Seq2Seq model built on meta, a token's Linear FLOPs against FlopCounterMode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from ffn_cli.cli import app  # noqa: E402
from ffn_cli.configs.encoder_decoder import seq2seq_class  # noqa: E402
from ffn_cli.configs.layer_read import read_layout  # noqa: E402
from ffn_cli.costs.decode_state import decode_state  # noqa: E402
from ffn_cli.models.count import count_model  # noqa: E402
from tests.helpers import cli_json  # noqa: E402

T5_KIN = ("t5", "mt5", "umt5", "longt5", "switch_transformers")
# T5 of 64 wide, 2 + 3 layers of 4 heads × 16 (64 inner), a gated FFN of 96
_T5 = dict(d_model=64, d_ff=96, num_layers=2, num_decoder_layers=3, num_heads=4, d_kv=16, vocab_size=100,
           feed_forward_proj="gated-gelu", decoder_start_token_id=0, pad_token_id=0)  # fmt: skip
CROSS = "cross-attention over the encoder's output"
UNSIZED = "the config does not say how long a source is (--source-len N sizes them)"


def _config(model_type: str, **keys: Any) -> dict[str, Any]:
    return {**transformers.AutoConfig.for_model(model_type, **keys).to_dict(), "model_type": model_type}


def _seq2seq(config: dict[str, Any]) -> Any:
    found = seq2seq_class(config["model_type"])
    assert found is not None
    return found[0].from_config(transformers.AutoConfig.for_model(**config)).eval().requires_grad_(False)


@pytest.mark.parametrize("model_type", T5_KIN)
def test_every_parameter_once_against_the_seq2seq_model(model_type: str) -> None:
    # transformers' defaults on meta: the total, and the encoder (its blocks of the decoder's own class) as the tower
    config = _config(model_type)
    layout = read_layout(config, name=model_type, source=model_type)
    with torch.device("meta"):
        model = _seq2seq(config)
    counted = count_model(layout.spec)
    assert counted.total_params == sum(p.numel() for p in model.parameters())
    shared = model.get_input_embeddings().weight
    assert counted.vision_params == sum(p.numel() for p in model.get_encoder().parameters() if p is not shared)
    assert layout.spec.n_layers == len(model.get_decoder().block) and layout.spec.norm == "rmsnorm"
    assert layout.spec.source_unsized


@pytest.mark.parametrize(("source", "generated"), [(7, 5), (19, 12)])
def test_what_decoding_keeps_at_source_len_against_transformers_cache(source: int, generated: int) -> None:
    # By hand: each of the 3 decoder layers keeps K and V of 4 heads × 16 for every token decoded and
    # for every source token: the source --source-len says.
    config = _config("t5", **_T5)
    layout = read_layout(config, name="small", source="small")
    spec = layout.spec.with_source_tokens(source)
    kinds = {str.__str__(k.kind): k for k in decode_state(spec, layout.windows, layout.chunks, generated)}
    assert kinds["attention"].elements_per_layer == generated * 2 * 64
    assert kinds[CROSS].elements_per_layer == source * 2 * 64 and kinds[CROSS].layers == 3
    torch.manual_seed(0)
    with torch.no_grad():
        out = _seq2seq(config)(
            input_ids=torch.randint(1, 100, (1, source)), decoder_input_ids=torch.randint(1, 100, (1, generated)), use_cache=True
        )
    cache = out.past_key_values
    for i in range(3):
        own, other = cache.self_attention_cache.layers[i], cache.cross_attention_cache.layers[i]
        assert own.keys.numel() + own.values.numel() == kinds["attention"].elements_per_layer
        assert other.keys.numel() + other.values.numel() == kinds[CROSS].elements_per_layer


def test_a_tokens_linear_flops_against_flop_counter() -> None:
    # One token decoded against a source of 6: every Linear of the decoder and the head under
    # FlopCounterMode, less the cross-attention's k and v, which run on the source's 6 tokens once.
    from torch.utils.flop_counter import FlopCounterMode

    config = _config("t5", **_T5)
    spec = read_layout(config, name="small", source="small").spec
    model = _seq2seq(config)
    prefix = type(model).__name__
    linears = {f"{prefix}.{n}": n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and not n.startswith("encoder.")}
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(input_ids=torch.randint(1, 100, (1, 6)), decoder_input_ids=torch.tensor([[1]]))
    flops = {linears[k]: sum(c.values()) for k, c in counter.get_flop_counts().items() if k in linears}
    on_source = sum(f for n, f in flops.items() if n.endswith(("EncDecAttention.k", "EncDecAttention.v")))
    assert on_source == 3 * 2 * (2 * 6 * 64 * 64)  # 3 layers, k and v, 6 source tokens
    assert count_model(spec).matmul_flops_per_token == sum(flops.values()) - on_source


def test_the_answer_names_the_source_it_cannot_size_until_given(tmp_path: Path) -> None:
    path = tmp_path / "t5.json"
    path.write_text(json.dumps(_config("t5", **_T5)))
    args = ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--seq-len", "16"]
    plain = CliRunner().invoke(app, args, env={"COLUMNS": "100"})
    assert plain.exit_code == 0, plain.output
    text = " ".join(plain.output.split())
    assert "the verdict leaves out: the keys and values each decoder layer's cross-attention keeps of the encoder's output" in text
    assert UNSIZED in text and "not sized: left out" in text
    data = cli_json(*args)
    cross = next(k for k in data["decode_state"]["kinds"] if k["kind"] == CROSS)
    assert cross["sized"] is False and cross["encoder_tokens"] is None  # named as not sized, never 0 B
    assert "not sized" in text and "0 B" not in text
    over = cli_json("params", "--config", str(path), "--seq-len", "16")["flops_over_seq_len"]
    assert over["rows"][0]["mixer_state_flops"] is None
    # 3 layers, K and V of 64 each, 2 bytes: the decoder's 16 tokens and the source's 40
    given = cli_json(*args, "--source-len", "40")
    cross = next(k for k in given["decode_state"]["kinds"] if k["kind"] == CROSS)
    assert cross["encoder_tokens"] == 40 and cross["bytes"] == 3 * 40 * 2 * 64 * 2
    assert given["per_gpu_memory"]["kv_cache_bytes"] == 3 * (16 + 40) * 2 * 64 * 2
    shown = " ".join(CliRunner().invoke(app, [*args, "--source-len", "40"], env={"COLUMNS": "100"}).output.split())
    assert UNSIZED not in shown


def test_trocrs_decoder_alone(tmp_path: Path) -> None:
    # TrOCR's causal LM: the decoder of a vision encoder-decoder, the encoder not in it; at --source-len
    # 577 (a ViT of 384² in patches of 16, and its class token) each of 12 layers keeps K and V of 1,024.
    path = tmp_path / "trocr.json"
    config = _config("trocr")
    path.write_text(json.dumps(config))
    with torch.device("meta"):
        built = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    data = cli_json("params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--source-len", "577")
    assert data["total_params"] == sum(p.numel() for p in built.parameters())
    cross = next(k for k in data["decode_state"]["kinds"] if k["kind"] == CROSS)
    assert cross["bytes"] == 12 * 577 * 2 * 1024 * 2
    # its encoder, a vision model, is not in this config: named in what the verdict and the roofline leave out
    elsewhere = "the encoder whose output these layers attend to, which is not in this model"
    assert any(elsewhere in what for what in data["per_gpu_memory"]["left_out"])
    assert any(elsewhere in what for what in data["roofline"]["left_out"])


def test_a_head_transformers_ties_against_the_config_is_said(tmp_path: Path) -> None:
    # transformers 5's T5Config ties the head whatever the file says: counted as built, the difference said
    path = tmp_path / "t5.json"
    path.write_text(json.dumps(_config("t5", **_T5) | {"tie_word_embeddings": False}))
    text = " ".join(CliRunner().invoke(app, ["params", "--config", str(path)], env={"COLUMNS": "100"}).output.split())
    assert "its config says tie_word_embeddings: false, yet transformers builds its head tied" in text
    assert f"holds {100 * 64:,} more parameters" in text


def test_the_encoders_linears_are_split_over_tp(tmp_path: Path) -> None:
    # T5's encoder FFN (DenseReluDense's wi_0, wi_1, wo) and attention (q, k, v, o) are linears --tp splits;
    # its norms alone stay whole on each GPU (2 layers × 2 norms and the final one, 64 each, 2 B).
    path = tmp_path / "t5.json"
    path.write_text(json.dumps(_config("t5", **_T5)))
    memory = cli_json("params", "--config", str(path), "--gpu", "h200", "--tp", "2", "--source-len", "8")["per_gpu_memory"]
    assert memory["replicated_bytes"] == (2 * 2 + 1 + 3 * 3 + 1) * 64 * 2  # the encoder's norms and the decoder's


def test_switch_transformers_routes_each_token_to_one_expert() -> None:
    # Its router (SwitchTransformersTop1Router) picks one expert; no config key says so. transformers'
    # default: 12 decoder layers, every fourth from layer 1 a MoE of 8 experts of 768 → 2,048 → 768.
    config = _config("switch_transformers")
    spec = read_layout(config, name="switch", source="switch").spec
    assert spec.moe_ffn is not None and spec.moe_ffn.top_k == 1 and spec.moe_ffn.experts == 8
    assert spec.moe_layers == (1, 5, 9)
    counted = count_model(spec)
    unpicked = 3 * 7 * 2 * 768 * 2048  # 7 of 8 experts a MoE layer, wi and wo each
    source_kv = 12 * 2 * 768 * 768  # the cross-attention's k and v, run once a source
    assert counted.active_params == counted.total_params - counted.vision_params - unpicked - source_kv
