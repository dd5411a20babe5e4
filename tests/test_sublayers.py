"""LongCat-Flash read from transformers' own modules (configs/layer_read/): each decoder layer two
attention-and-MLP sublayers, a shortcut MoE beside them whose router's pool holds zero-computation
(identity) experts. Held to the whole model built on meta, transformers' cache after a forward,
FlopCounterMode module by module, and hand counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.costs.decode_state import decode_state
from ffn_cli.models.count import count_model
from ffn_cli.models.spec import layer_ranges
from tests.module_flops import module_flops

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


from ffn_cli.configs import meta_build  # noqa: E402  (torch and transformers)
from ffn_cli.configs.layer_read import read_layout  # noqa: E402

# 3 decoder layers of 2 sublayers; 8 experts of width 16 and 4 zero-computation ones, top-3; MLA with
# a 16-wide latent and an 8-wide rotary key; dense MLPs of width 96.
_TINY = dict(hidden_size=64, num_layers=3, num_attention_heads=4, num_key_value_heads=4, ffn_hidden_size=96, q_lora_rank=32,
             kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8, n_routed_experts=8, zero_expert_num=4,
             moe_topk=3, expert_ffn_hidden_size=16, vocab_size=256, head_dim=8)  # fmt: skip
_EXPERT = 3 * 16 * 64  # gate, up and down of one routed expert
_DENSE = 3 * 96 * 64  # one dense MLP


def _config(**keys: Any) -> dict[str, Any]:
    return {**transformers.AutoConfig.for_model("longcat_flash", **{**_TINY, **keys}).to_dict(), "model_type": "longcat_flash"}


def _layout(config: dict[str, Any]) -> Any:
    return read_layout(config, name="tiny", source="tiny")


def _params_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["params", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_sublayers_are_the_layers_the_config_numbers() -> None:
    config = _config()
    spec = _layout(config).spec
    # num_hidden_layers is 6, twice num_layers: the sublayers, each an MLA; the shortcut MoE with the first of each pair.
    assert (spec.n_layers, spec.sublayers) == (6, 2)
    assert spec.attention_layers == tuple(range(6))
    assert spec.moe_layers == (0, 2, 4) and spec.dense_layers == (1, 3, 5)
    assert spec.zero_experts == 4
    moe = spec.moe_ffn
    # The dense MLP beside the experts reads the same input: the MoE's shared expert, 96 wide.
    assert (moe.experts, moe.top_k, moe.d_ff, moe.shared_d_ff) == (8, 3, 16, 96)
    # The router scores 8 + 4 experts: the FFNSpec's 8 rows and 4 beside them.
    assert [t.shape for t in spec.moe_extra] == [(4, 64)]


def test_sublayers_count_the_whole_build() -> None:
    config = _config()
    counted = count_model(_layout(config).spec)
    built = meta_build.count(config, name="tiny", source="tiny")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    assert counted.total_params == built.total_params == sum(p.numel() for p in model.parameters())
    # The range by hand: 3 MoE layers of 8 experts; a token's 3 picks among 8 + 4: at most 3 real
    # experts, at least none (the 4 zero experts take all 3), on average 3 · 8 / 12 = 2.
    routed = 3 * 8 * _EXPERT
    assert counted.active_params == counted.total_params - routed + 3 * 3 * _EXPERT
    assert counted.least_active_params == counted.total_params - routed
    assert counted.mean_active_params == counted.total_params - routed + 3 * 2 * _EXPERT
    # The whole build's count (configs/built.py, from transformers' experts container) says the same.
    assert (built.least_active_params, built.mean_active_params, built.active_params) == (
        counted.least_active_params,
        counted.mean_active_params,
        counted.active_params,
    )


@pytest.mark.parametrize("context", [2, 9])
def test_a_cache_layer_per_sublayer_against_transformers(context: int) -> None:
    config = _config()
    layout = _layout(config)
    hf = transformers.AutoConfig.for_model(**config)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf).eval().requires_grad_(False)
    with torch.no_grad():
        cache = model(torch.randint(0, 256, (1, context)), use_cache=True).past_key_values
    # transformers caches one layer a sublayer (layer_idx 2i and 2i + 1), each every token seen.
    assert len(cache.layers) == layout.spec.n_layers == 6
    assert all(layer.keys.shape[-2] == context for layer in cache.layers)
    # By hand: MLA keeps its 16-wide latent and 8-wide rotary key a token, in all 6 (transformers' eager
    # cache holds the decompressed keys and values instead).
    (kind,) = decode_state(layout.spec, layout.windows, layout.chunks, context)
    assert (kind.layers, kind.elements_per_layer) == (6, context * (16 + 8))


def test_flops_against_flop_counter() -> None:
    # One token, module by module: each MLA's matmuls are ffn's plus its scores over the one key (Q·Kᵀ over
    # 8 + 8 and P·V over 8, 4 heads); each dense MLP's; the router's over its 12 rows. FlopCounterMode does
    # not see the experts' grouped matmuls: they are held to the hand count of 2 FLOPs a weight.
    config = _config()
    spec = _layout(config).spec
    counts = module_flops(config, torch.zeros(1, 1, dtype=torch.long))
    scores = 2 * 4 * (16 + 8)
    for i in range(3):
        for j in range(2):
            assert counts[f"layers.{i}.self_attn.{j}"] == spec.attention_flops_of(2 * i + j) + scores
            assert counts[f"layers.{i}.mlps.{j}"] == 2 * _DENSE == spec.ffn_matmul_flops(spec.ffn_of(2 * i + 1))
        assert counts[f"layers.{i}.mlp.router"] == 2 * 12 * 64
    moe = spec.moe_ffn
    # The MoE layer: its router's 12 rows, the shared MLP and 3 experts, every pick real; 2 on average.
    assert spec.ffn_matmul_flops(moe) == 2 * (12 * 64 + _DENSE + 3 * _EXPERT)
    assert spec.mean_ffn_flops(moe) == 2 * (12 * 64 + _DENSE + 2 * _EXPERT)


def test_the_whole_deployment_answer(tmp_path: Path) -> None:
    path = tmp_path / "longcat.json"
    path.write_text(json.dumps(_config()))
    args = ["--config", str(path), "--gpu", "h200", "--phase", "decode", "--batch", "2", "--seq-len", "100"]
    data = _params_json(*args)
    # By hand: 6 sublayers of MLA, each token its 16 + 8 elements, 2 bytes, 2 sequences.
    assert data["per_gpu_memory"]["kv_cache_bytes"] == 2 * 100 * 6 * (16 + 8) * 2
    assert data["sublayers"] == 2
    (case,) = data["roofline"]["cases"]
    # The MoE layer's FFN for the 2 new tokens: the router, the shared MLP, and 3 · 8 / 12 = 2 real experts each.
    assert case["ffn_one_layer"]["flops"] == 2 * 2 * (12 * 64 + _DENSE + 2 * _EXPERT)
    assert "12 · 8 / (8 + 4)" not in data["roofline"]["real_picks"] and "3 · 8 / (8 + 4) = 2" in data["roofline"]["real_picks"]
    assert not data["per_gpu_memory"].get("left_out") and not data["layout"]["left_out"]
    text = " ".join(CliRunner().invoke(app, ["params", *args], env={"COLUMNS": "80"}).output.split())
    assert "3 layers of 2 sublayers" in text and "active per token, least" in text
    # FFN ×1 is a MoE sublayer's; the 3 dense ones are in the model's row (and said so)
    assert data["roofline"]["ffn_one_layer_of"] == "moe" and data["roofline"]["dense_ffn_layers_beside_moe"] == 3
    assert "FFN ×1: a MoE layer's; model ×6 holds the 3 dense FFN layers too." in text
    assert "zero-computation" in text and "fits" in text


def test_expert_parallel_sends_only_the_real_picks(tmp_path: Path) -> None:
    # Dispatch and combine carry a token to each real expert it picks: a zero-computation pick stays on its GPU.
    path = tmp_path / "longcat.json"
    base = ["--gpu", "h200", "--phase", "decode", "--batch", "8", "--seq-len", "100", "--tp", "2", "--ep", "2"]
    sent = {}
    for zero in (0, 4):
        path.write_text(json.dumps(_config(zero_expert_num=zero)))
        (case,) = _params_json("--config", str(path), *base)["roofline"]["cases"]
        sent[zero] = case["communication"]
    # A MoE layer sends its --tp all-reduce, as attention does, and its all-to-all: 3 picks a token without
    # zero experts, 2 with 4 of them among 12, so the all-to-all shrinks by a third.
    all_to_all = {z: c["ffn_layer_bytes_sent"] - c["attention_layer_bytes_sent"] for z, c in sent.items()}
    assert all_to_all[0] > 0
    assert all_to_all[4] == pytest.approx(all_to_all[0] * 2 / 3)


def test_every_other_layer_is_a_series() -> None:
    assert layer_ranges((0, 2, 4, 6, 8)) == "0, 2, …, 8"
    assert layer_ranges((1, 5, 9, 13, 17, 21)) == "1, 5, …, 21"
    assert layer_ranges((0, 2, 4, 6)) == "0, 2, 4, 6"  # short: written out
    assert layer_ranges((0, 1, 2, 3, 4)) == "0–4"


def test_the_mean_flops_beside_the_most() -> None:
    # Forward FLOPs a token: every pick a real expert (the count's active path), and on average 2 of the 3
    # picks in each of the 3 MoE layers: one expert's 2 FLOPs a weight fewer a layer.
    counted = count_model(_layout(_config()).spec)
    assert counted.matmul_flops_per_token - counted.mean_matmul_flops_per_token == 3 * 1 * 2 * _EXPERT


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        ({"zero_expert_num": -5}, "key zero_expert_num = -5: must be a whole number, 0 or more"),
        ({"zero_expert_num": 2.5}, "zero_expert_num"),
        # num_hidden_layers is 2 × num_layers: 5 beside num_layers 3 is read as 4
        ({"num_hidden_layers": 5}, "key num_hidden_layers = 5: transformers reads it as 4 from the file's other keys: they disagree"),
    ],
)
def test_a_config_that_contradicts_itself_is_refused(tmp_path: Path, keys: dict[str, Any], said: str) -> None:
    # Both paths, counting alone and the deployment answer: one line naming the key, exit 2, nothing built.
    path = tmp_path / "longcat.json"
    path.write_text(json.dumps({**_config(), **keys}))
    for extra in ([], ["--gpu", "h200"]):
        result = CliRunner().invoke(app, ["params", "--config", str(path), *extra])
        assert result.exit_code == 2 and said in result.stderr and "Traceback" not in result.output
