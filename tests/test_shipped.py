"""Checkpoints as shipped: the multi-token-prediction layers and router score biases stored beside
the model transformers builds (the biases held to the buffers transformers' own model holds),
and the config's quantization_config deciding what --weights quantizes; each worked out by hand,
against transformers or against a published size."""

from __future__ import annotations

import json
from math import ceil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app

runner = CliRunner()
ROOT = Path(__file__).parents[1]


def _checkpoint(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, ["params", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["checkpoint"]  # type: ignore[no-any-return]


def _role(checkpoint: dict, role: str) -> dict:  # type: ignore[type-arg]
    """The checkpoint's row of one role."""
    return next(r for r in checkpoint["roles"] if r["role"] == role)  # type: ignore[no-any-return]


def _fp8_block(rows: int, cols: int) -> int:
    """e4m3 elements and one float32 scale per 128 × 128 block, as DeepSeek-V3 ships them."""
    return rows * cols + ceil(rows / 128) * ceil(cols / 128) * 4


def test_deepseek_v3s_mtp_layer_by_hand() -> None:
    d, v, experts, moe, rank_q, rank_kv = 7168, 129280, 256, 2048, 1536, 512
    linears = [(rank_q, d), (128 * 192, rank_q), (rank_kv + 64, d), (128 * 256, rank_kv), (d, 128 * 128)]  # MLA
    linears += experts * [(moe, d), (moe, d), (d, moe)] + [(moe, d), (moe, d), (d, moe)]  # routed and shared experts
    linears.append((d, 2 * d))  # eh_proj
    bf16 = (rank_q + rank_kv) + 256 * d + 5 * d + 2 * v * d  # latents' norms, router, 5 norms, embeddings and head
    expected = sum(_fp8_block(r, c) for r, c in linears) + 2 * bf16
    c = _checkpoint("--preset", "deepseek-v3")
    row = next(r for r in c["roles"] if r["role"] == "mtp")
    assert row["bytes"] == expected and row["format"] == "mixed"
    params = sum(r * c_ for r, c_ in linears) + bf16
    assert row["params"] == params
    # DeepSeek's README_WEIGHTS: 11.5B unique MTP parameters besides the shared 0.9B embedding and
    # 0.9B head; this count's unique ones are 11.61B, 11.51B of them the decoder layer (eh_proj 0.10B).
    assert 11.5e9 < params - 2 * v * d < 11.7e9
    biases = next(r for r in c["roles"] if r["role"] == "bias")
    assert biases["bytes"] == (58 + 1) * 256 * 4 and biases["format"] == "fp32"  # every MoE layer, the MTP one too


def test_kimi_k2_ships_deepseek_v3s_fp8_blocks_by_hand() -> None:
    # Kimi K2 (Moonshot's config: DeepSeek-V3's architecture and quantization_config, e4m3 in
    # 128 × 128 blocks): 61 layers, the first dense, 60 of 384 routed experts and one shared.
    d, v, heads, rank_q, rank_kv = 7168, 163840, 64, 1536, 512
    attention = [(rank_q, d), (heads * 192, rank_q), (rank_kv + 64, d), (heads * 256, rank_kv), (d, heads * 128)]
    linears = 61 * attention + [(18432, d), (18432, d), (d, 18432)] + 60 * 385 * [(2048, d), (2048, d), (d, 2048)]
    bf16 = 61 * (rank_q + rank_kv + 2 * d) + d + 60 * 384 * d + 2 * v * d  # norms, routers, embeddings and head
    c = _checkpoint("--preset", "kimi-k2")
    assert c["bytes"] == sum(_fp8_block(r, c_) for r, c_ in linears) + 2 * bf16 + 60 * 384 * 4  # and the score biases
    assert {r["role"]: r["format"] for r in c["roles"]}["experts"] == "fp8-block-128x128"


def test_no_mtp_leaves_the_layer_out() -> None:
    full, bare = _checkpoint("--preset", "deepseek-v3"), _checkpoint("--preset", "deepseek-v3", "--no-mtp")
    mtp = next(r for r in full["roles"] if r["role"] == "mtp")["bytes"]
    assert full["bytes"] - bare["bytes"] == mtp + 256 * 4  # and the MTP layer's router bias
    assert not any(r["role"] == "mtp" for r in bare["roles"])
    result = runner.invoke(app, ["params", "--preset", "llama-3.1-8b", "--no-mtp"])
    assert result.exit_code == 2 and "--no-mtp" in result.stderr and "Traceback" not in result.output


def test_the_checkpoint_says_what_it_holds_beside_the_parameter_table() -> None:
    # The summary's weights are the parameter table's 671,026,404,352 (DeepSeek's published 671B);
    # the checkpoint adds the MTP layer and the router score biases counted by hand above, and says so
    # beside its bf16 size. A checkpoint with nothing beside the model says nothing.
    shipped = f"{13_463_426_048 + 59 * 256:,}"  # the MTP layer as counted by hand above, and 59 layers' 256 biases
    text = " ".join(runner.invoke(app, ["params", "--preset", "deepseek-v3"], terminal_width=100).output.split())
    assert f"holds the parameter table's 671,026,404,352 parameters and {shipped} more it ships beside them" in text
    assert "(multi-token prediction, router score biases)" in text
    plain = " ".join(runner.invoke(app, ["params", "--preset", "deepseek-v3", "--no-mtp"], terminal_width=100).output.split())
    assert "(router score biases)" in plain and "multi-token" not in plain
    assert "ships beside" not in runner.invoke(app, ["params", "--preset", "llama-3.1-8b", "--weights", "fp8"]).output


def test_the_configs_quantization_config_decides_what_weights_quantizes() -> None:
    # gpt-oss-120b's MXFP4 checkpoint keeps attention in bf16, as its quantization_config says:
    # --weights mxfp4 now prices that checkpoint (its published 65,248,815,744 B); --quantize
    # linears still puts attention in MXFP4 too.
    shipped = _checkpoint("--preset", "gpt-oss-120b")
    asked = _checkpoint("--preset", "gpt-oss-120b", "--weights", "mxfp4")
    assert asked["bytes"] == shipped["bytes"] == 65_248_815_744
    assert asked["quantized_roles"] == ["experts"]
    linears = _checkpoint("--preset", "gpt-oss-120b", "--weights", "mxfp4", "--quantize", "linears")
    assert linears["quantized_roles"] == ["attention", "experts"] and linears["bytes"] < asked["bytes"]
    # A model without a quantization_config: the linears, as before.
    assert _checkpoint("--preset", "llama-3.1-8b", "--weights", "int4")["quantized_roles"] == ["attention", "dense_ffn"]


def _config_with(tmp_path, preset: str, qc: dict) -> str:  # type: ignore[no-untyped-def, type-arg]
    from ffn_cli.configs.files import load_preset

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(load_preset(preset)) | {"quantization_config": qc}), encoding="utf-8")
    return str(path)


# Llama-3.1-8B's linears per layer, (out, in): q, k, v, o, gate, up, down.
_LLAMA_8B = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336)]
_LLAMA_8B_REST = 2 * 128256 * 4096 * 2 + (2 * 32 + 1) * 4096 * 2  # embeddings, head, norms in bf16


def _ct(fmt: str, weights: dict, activations: dict | None = None) -> dict:  # type: ignore[type-arg]
    group = {"targets": ["Linear"], "weights": weights} | ({"input_activations": activations} if activations else {})
    return {"quant_method": "compressed-tensors", "format": fmt, "ignore": ["lm_head"], "config_groups": {"group_0": group}}


def test_compressed_tensors_fp8_dynamic_has_a_scale_per_output_channel(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # RedHat's FP8-dynamic: e4m3 weights, one bf16 weight_scale per output row, activations dynamic (no input_scale).
    qc = _ct("float-quantized", {"num_bits": 8, "type": "float", "strategy": "channel"}, {"num_bits": 8, "type": "float", "dynamic": True})
    c = _checkpoint("--config", _config_with(tmp_path, "llama-3.1-8b", qc))
    assert c["bytes"] == 32 * sum(o * i + o * 2 for o, i in _LLAMA_8B) + _LLAMA_8B_REST
    assert c["quantized_roles"] == ["attention", "dense_ffn"]


def test_compressed_tensors_w4a16_keeps_g_idx_and_the_shape(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # pack-quantized int4, group 128, symmetric, activation order: packed int4, a bf16 scale per 128
    # inputs, an int32 g_idx per input column and weight_shape, two int64, per linear.
    weights = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True, "actorder": "group"}
    c = _checkpoint("--config", _config_with(tmp_path, "llama-3.1-8b", _ct("pack-quantized", weights)))
    assert c["bytes"] == 32 * sum(o * i // 2 + o * (i // 128) * 2 + i * 4 + 16 for o, i in _LLAMA_8B) + _LLAMA_8B_REST


def test_static_fp8_stores_an_input_scale_per_linear(tmp_path) -> None:  # type: ignore[no-untyped-def]
    dynamic = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    static = {"quant_method": "fp8", "activation_scheme": "static"}
    a = _checkpoint("--config", _config_with(tmp_path, "llama-3.1-8b", dynamic))
    b = _checkpoint("--config", _config_with(tmp_path, "llama-3.1-8b", static))
    assert a["bytes"] == 32 * sum(o * i + 4 for o, i in _LLAMA_8B) + _LLAMA_8B_REST  # a float32 weight_scale each
    assert b["bytes"] - a["bytes"] == 32 * 7 * 4  # and a float32 input_scale each


def test_a_compressed_tensors_scheme_ffn_does_not_read_says_so(tmp_path) -> None:  # type: ignore[no-untyped-def]
    qc = _ct("marlin-24", {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128})
    result = runner.invoke(app, ["params", "--config", _config_with(tmp_path, "llama-3.1-8b", qc), "--json"])
    assert result.exit_code == 0 and "not read" in json.loads(result.stdout)["checkpoint"]["note"]


def test_modelopt_nvfp4_stores_what_nvidias_checkpoints_store() -> None:
    # nvidia/MiniMax-M2.5-NVFP4 (modelopt, quant_algo NVFP4), its ignore list keeping attention and
    # the routers: each routed expert matrix stores e2m1 elements, an e4m3 scale per 16 and two
    # float32 per tensor (weight_scale_2, input_scale). 62 layers × 256 experts × 3 matrices of
    # 1,536 × 3,072, the routers' score biases (62 × 256) in float32, the rest in bf16.
    c, n, biases = _checkpoint("--preset", "minimax-m2.5-nvfp4"), 1536 * 3072, 62 * 256
    experts = _role(c, "experts")
    assert (experts["params"], experts["format"], c["quantized_roles"]) == (62 * 256 * 3 * n, "nvfp4", ["experts"])
    assert experts["bytes"] == 62 * 256 * 3 * (n // 2 + n // 16 + 8)
    rest = sum(r["bytes"] for r in c["roles"] if r["role"] != "experts")
    assert rest == 2 * (c["total_params"] - experts["params"] - biases) + 4 * biases  # bf16 everywhere else
    assert "modelopt, not converted: attention projections, LM head, routers" in c["origin"]
    assert "KV-cache quantization is not read: the KV cache is priced at --dtype" in c["note"]  # its kv_cache_scheme


def test_modelopt_fp8_and_an_algorithm_ffn_does_not_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # ModelOpt's FP8: e4m3 and a float32 weight_scale and input_scale per linear; lm_head ignored.
    fp8 = {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["lm_head"]}
    c = _checkpoint("--config", _config_with(tmp_path, "llama-3.1-8b", fp8))
    assert c["bytes"] == 32 * sum(o * i + 8 for o, i in _LLAMA_8B) + _LLAMA_8B_REST
    qc = {"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}
    result = runner.invoke(app, ["params", "--config", _config_with(tmp_path, "llama-3.1-8b", qc), "--json"])
    assert result.exit_code == 0 and "quant_algo 'W4A8_AWQ' is not read" in json.loads(result.stdout)["checkpoint"]["note"]


def test_a_wrappers_text_model_quantized_with_regular_expressions_left_out() -> None:
    # Kimi K2.5 keeps its quantization_config in text_config: compressed-tensors int4, a bf16 scale
    # per 32, its ignore list regular expressions for attention, the shared experts and the dense MLP
    # (re:.*mlp\.(gate|up|gate_up|down)_proj.*, which does not reach the routed experts' mlp.experts.N).
    # 60 MoE layers × 384 experts × 3 matrices of 2,048 × 7,168, each with weight_shape's two int64.
    c, n = _checkpoint("--preset", "kimi-k2.5"), 2048 * 7168
    experts = _role(c, "experts")
    assert (experts["params"], experts["format"]) == (60 * 384 * 3 * n, "ct-w4a16-group32")
    assert experts["bytes"] == 60 * 384 * 3 * (n // 2 + n // 32 * 2 + 16)
    assert {_role(c, r)["format"] for r in ("attention", "dense_ffn", "shared", "router")} == {"bf16"}  # routers: no Linear


@pytest.mark.parametrize(
    ("pattern", "roles"),
    [
        (r".*self_attn.*", ("attention",)),
        (r".*mlp\.(gate|up|gate_up|down)_proj.*", ("dense_ffn",)),
        (r".*mlp.gate$", ("router",)),
        (r".*experts.*", ("experts", "shared")),
        (r".*q_proj", None),  # attention's o_proj not: ffn cannot say it keeps attention out
        (r"(", None),  # no regular expression
    ],
)
def test_a_regular_expression_leaves_out_the_roles_it_matches_whole(pattern: str, roles: tuple[str, ...] | None) -> None:
    from ffn_cli.costs.weights import _not_converted

    kept, unread = _not_converted([f"re:{pattern}"])
    assert (tuple(sorted(kept)) or None, unread) == ((tuple(sorted(roles)), []) if roles else (None, [f"re:{pattern}"]))


def test_glm5s_mtp_layer_against_transformers_last_layer(tmp_path: Path) -> None:
    # GLM-5 (glm_moe_dsa) ships its MTP layer as DeepSeek-V3 does, indexer and all (vLLM loads it as
    # deepseek_mtp): one more of transformers' own last decoder layer, and beside it enorm, hnorm and
    # shared_head.norm (3 · d), eh_proj (d, 2 · d), shared_head.head and a copy of the embeddings (v, d) each.
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    keys = dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, kv_lora_rank=16, q_lora_rank=24,
                qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, index_head_dim=8, index_n_heads=2, vocab_size=128,
                first_k_dense_replace=1, max_position_embeddings=4096)  # fmt: skip
    config = {**transformers.AutoConfig.for_model("glm_moe_dsa", **keys).to_dict(), "model_type": "glm_moe_dsa"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "num_nextn_predict_layers": 1}))
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    last = sum(p.numel() for p in model.model.layers[-1].parameters())
    d, v = 64, 128
    row = next(r for r in _checkpoint("--config", str(path), "--weights", "fp8")["roles"] if r["role"] == "mtp")
    assert row["params"] == last + 3 * d + 2 * d * d + 2 * v * d
    # Decoding speculatively, the MTP layer keeps what the last layer keeps at 16 tokens, 2 B each:
    # its latent and rotary key (16 + 8 a token) and its indexer's key (8 a token).
    result = runner.invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--seq-len", "16", "--json"])
    kinds = json.loads(result.stdout)["decode_state"]["kinds"]
    mtp = [(k["kind"], k["layers"], k["bytes"]) for k in kinds if k.get("multi_token_prediction")]
    assert mtp == [("MTP: attention", 1, 16 * (16 + 8) * 2), ("MTP: DSA indexer", 1, 16 * 8 * 2)]
    path.write_text(json.dumps(config))  # no num_nextn_predict_layers: no MTP layer
    assert not any(r["role"] == "mtp" for r in _checkpoint("--config", str(path), "--weights", "fp8")["roles"])


@pytest.mark.parametrize("key", ["mtp_num_hidden_layers", "num_nextn_predict_layers", "num_mtp_layers"])
def test_an_mtp_layer_of_unknown_shape_is_named_not_counted(tmp_path: Path, key: str) -> None:
    # A config that declares MTP layers for a family whose checkpoints' MTP shape ffn does not know
    # (Ernie 4.5's, by each key configs use: DeepSeek's, transformers' own name for it, Qwen's):
    # the verdict names it as left out, by the file's key, and --no-mtp, which serves without it,
    # is taken and drops the line.
    path = tmp_path / "config.json"
    config = {k: v for k, v in json.loads((ROOT / "ffn_cli" / "presets" / "ernie-4.5-21b-a3b.json").read_text()).items() if k[0] != "_"}
    config = {k: v for k, v in config.items() if k not in ("num_nextn_predict_layers", "num_mtp_layers", "mtp_num_hidden_layers")}
    path.write_text(json.dumps({**config, key: 1}))
    args = ["params", "--config", str(path), "--gpu", "h200", "--tp", "4", "--json"]
    with_mtp, without = (json.loads(runner.invoke(app, a).stdout)["per_gpu_memory"] for a in (args, [*args, "--no-mtp"]))
    assert any(f"({key} 1)" in line for line in with_mtp["left_out"])
    assert not any(key in line for line in without.get("left_out", []))
    assert with_mtp["checkpoint_bytes"] == without["checkpoint_bytes"]  # neither counts it


def test_mtp_modules_a_checkpoint_does_not_ship_are_said_so_not_counted() -> None:
    # MiniMax-M2.5's config declares 3 MTP modules (use_mtp, num_mtp_modules), but MiniMax's checkpoints
    # store layers 0–61 alone (MiniMax-AI/MiniMax-M2.5#8): the verdict says so and counts nothing for
    # them; --no-mtp, serving without them, is taken and drops the line.
    args = ["params", "--preset", "minimax-m2.5-nvfp4", "--gpu", "h200", "--tp", "4", "--json"]
    with_mtp, without = (json.loads(runner.invoke(app, a).stdout)["per_gpu_memory"] for a in (args, [*args, "--no-mtp"]))
    assert any(line.startswith("the 3 multi-token-prediction modules its config declares") for line in with_mtp["left_out"])
    assert not any("multi-token" in line for line in without.get("left_out", []))
    assert with_mtp["checkpoint_bytes"] == without["checkpoint_bytes"]


_V4_KEYS = dict(hidden_size=64, moe_intermediate_size=32, num_hidden_layers=4, num_attention_heads=4, head_dim=32, q_lora_rank=16,
                o_lora_rank=16, o_groups=2, n_routed_experts=8, num_experts_per_tok=2, vocab_size=128, index_n_heads=2,
                index_head_dim=16, index_topk=4, sliding_window=8, hc_mult=2, max_position_embeddings=4096,
                layer_types=["heavily_compressed_attention", "compressed_sparse_attention"] * 2,
                mlp_layer_types=["hash_moe", "moe", "moe", "moe"])  # fmt: skip


def test_deepseek_v4s_mtp_block_against_transformers_sliding_layer(tmp_path: Path) -> None:
    # DeepSeek's inference/model.py MTPBlock (the checkpoint's mtp.0.*, which transformers skips on
    # load): a decoder layer at layer_id = num_hidden_layers, past the hash-routed ones, whose
    # attention is the window alone (compress ratio 0) — transformers' own DeepseekV4DecoderLayer of
    # layer type sliding_attention and MLP type moe — and beside it e_proj and h_proj (d × d each),
    # enorm, hnorm and norm (d each), and hc_head_fn (hc, hc · d), hc_head_base (hc), hc_head_scale (1).
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4DecoderLayer

    config = {**transformers.AutoConfig.for_model("deepseek_v4", **_V4_KEYS).to_dict(), "model_type": "deepseek_v4"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    mtp_keys = {**_V4_KEYS, "num_hidden_layers": 5, "layer_types": [*_V4_KEYS["layer_types"], "sliding_attention"],
                "mlp_layer_types": [*_V4_KEYS["mlp_layer_types"], "moe"]}  # fmt: skip
    with torch.device("meta"):
        body = DeepseekV4DecoderLayer(transformers.AutoConfig.for_model("deepseek_v4", **mtp_keys), 4)
    d, hc, experts = 64, 2, 8
    c = _checkpoint("--config", str(path), "--weights", "fp8")
    row = next(r for r in c["roles"] if r["role"] == "mtp")
    assert row["params"] == sum(p.numel() for p in body.parameters()) + 2 * d * d + 3 * d + hc * hc * d + hc + 1
    # The score-routed layers' router biases, float32: layers 1–3 and the MTP layer (layer 0 routes by hash).
    biases = next(r for r in c["roles"] if r["role"] == "bias")
    assert biases["params"] == (3 + 1) * experts and biases["bytes"] == 4 * biases["params"]
    # Layer 0's table, token id → its 2 experts, int32 (DeepSeek's tid2eid): a buffer to transformers.
    table = next(r for r in c["roles"] if r["role"] == "table")
    assert (table["params"], table["bytes"], table["format"]) == (128 * 2, 128 * 2 * 4, "int32")
    bare = _checkpoint("--config", str(path), "--weights", "fp8", "--no-mtp")
    assert c["bytes"] - bare["bytes"] == row["bytes"] + experts * 4
    # Decoding speculatively, the MTP layer keeps its window's w − 1 latest tokens, K = V once: 7 × 32, 2 B each.
    result = runner.invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--seq-len", "64", "--json"])
    kinds = json.loads(result.stdout)["decode_state"]["kinds"]
    assert [(k["kind"], k["bytes"]) for k in kinds if k.get("multi_token_prediction")] == [("MTP: SWA, window 8", 7 * 32 * 2)]
    left_out = json.loads(result.stdout)["per_gpu_memory"].get("left_out", [])  # the MTP layer sized, not named
    assert not any("num_nextn_predict_layers" in line for line in left_out)


def test_expert_dtype_fp4_stores_the_routed_experts_in_mxfp4(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # DeepSeek-V4's config.json: fp8 128 × 128 blocks for the linears and `expert_dtype: fp4` for the routed
    # experts, which its reference model stores as float4_e2m1fn_x2 with a float8_e8m0fnu scale per 32 inputs.
    # On DeepSeek-V3's shapes, by hand: 58 MoE layers of 256 experts, each three (2048, 7168) matrices.
    qc = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}
    fp8 = _checkpoint("--config", _config_with(tmp_path, "deepseek-v3", qc), "--no-mtp")
    path = tmp_path / "v4-style.json"
    path.write_text(json.dumps(json.loads(Path(_config_with(tmp_path, "deepseek-v3", qc)).read_text()) | {"expert_dtype": "fp4"}))
    fp4 = _checkpoint("--config", str(path), "--no-mtp")
    experts = next(r for r in fp4["roles"] if r["role"] == "experts")
    matrices = 58 * 256 * 3
    assert experts["bytes"] == matrices * (2048 * 7168 // 2 + 2048 * (7168 // 32)) and experts["format"] == "mxfp4"
    before = next(r for r in fp8["roles"] if r["role"] == "experts")["bytes"]
    assert fp8["bytes"] - fp4["bytes"] == before - experts["bytes"]  # nothing else moves
    assert fp4["formats_by_role"]["experts"]["bits_per_weight"] == 4.25 and "expert_dtype fp4" in fp4["origin"]
    path.write_text(json.dumps(json.loads(path.read_text()) | {"expert_dtype": "int3"}))
    result = runner.invoke(app, ["params", "--config", str(path), "--gpu", "h200"])
    assert result.exit_code == 2 and "expert_dtype" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("model_type", ["qwen3_next", "qwen3_5_moe_text"])
def test_qwen_next_mtp_layer_against_transformers_full_attention_layer(tmp_path: Path, model_type: str) -> None:
    # Qwen3-Next's and Qwen3.5's checkpoints hold mtp.* (vLLM's qwen3_next_mtp and qwen3_5_mtp load
    # them): a decoder layer of the full-attention kind — transformers' own layer at a full-attention
    # index, its gated attention and its MoE — beside fc (2·d → d, no bias) and three norms (d each).
    # The embeddings and head are the model's: no copy of them.
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    keys = dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16, moe_intermediate_size=32,
                shared_expert_intermediate_size=32, num_experts=8, num_experts_per_tok=2, linear_num_key_heads=2,
                linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16, vocab_size=128)  # fmt: skip
    hf = transformers.AutoConfig.for_model(model_type, **keys)
    config = {**hf.to_dict(), "model_type": model_type, "mtp_num_hidden_layers": 1}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    layer_cls = type(transformers.AutoModelForCausalLM.from_config(hf).model.layers[3])
    with torch.device("meta"):
        body = layer_cls(hf, 3)  # layer 3: full attention (full_attention_interval 4)
    d = 64
    c = _checkpoint("--config", str(path), "--weights", "fp8")
    row = next(r for r in c["roles"] if r["role"] == "mtp")
    assert row["params"] == sum(p.numel() for p in body.parameters()) + 2 * d * d + 3 * d
    # Decoding speculatively, the MTP layer keeps what a full-attention layer keeps: K and V of 16 tokens, 2 KV heads × 16, 2 B.
    result = runner.invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--phase", "decode", "--seq-len", "16", "--json"])
    answer = json.loads(result.stdout)
    kinds = answer["decode_state"]["kinds"]
    assert [(k["kind"], k["bytes"]) for k in kinds if k.get("multi_token_prediction")] == [("MTP: attention", 16 * 2 * 2 * 16 * 2)]
    assert not any("multi-token" in line for line in answer["per_gpu_memory"].get("left_out", []))


# --- router score biases, against the buffers transformers builds --------------------------------

_SCORE_BIASES = ("e_score_correction_bias", "expert_bias")


def _meta_model(config: dict) -> Any:  # type: ignore[type-arg]
    """transformers' own model of `config`, on the meta device."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))


def _preset_config(name: str) -> dict:  # type: ignore[type-arg]
    from ffn_cli.configs.files import load_preset

    return {k: v for k, v in load_preset(name).items() if not k.startswith("_")}


def _bias_buffers(model: Any) -> list[int]:
    """The element count of each score-bias buffer the model holds, each one stored in its state dict."""
    buffers = [(n, b) for n, b in model.named_buffers() if n.rpartition(".")[2] in _SCORE_BIASES]
    assert {n for n, _b in buffers} <= set(model.state_dict())  # persistent: what a checkpoint holds
    return [b.numel() for _n, b in buffers]


@pytest.mark.parametrize(
    ("preset", "mtp"),
    [
        # GLM-4.5-Air declares num_nextn_predict_layers 1 and its last layer is MoE: its MTP layer's
        # router holds one more (vLLM's glm4_moe_mtp loads it); transformers builds no MTP layer.
        ("glm-4.5-air", 1),
        ("dots.llm1", 0),
        ("minimax-m2", 0),  # its bias sits on the MoE block itself, not on the router
        ("nemotron-3-nano-30b-a3b", 0),
        ("lfm2-8b-a1b", 0),  # LFM2-MoE's expert_bias
        ("glm-5", 1),  # glm_moe_dsa: no reader, laid out from transformers' modules; one MTP layer, as GLM-4.5-Air's
        ("longcat-flash-chat", 0),  # laid out; its routers score the zero experts too
    ],
)
def test_router_score_biases_are_the_buffers_transformers_builds(preset: str, mtp: int) -> None:
    # One float32 per expert of the router's pool in each layer whose router holds the buffer, as
    # transformers' own model on meta holds them, and one more bias for each MTP layer counted by hand.
    sizes = _bias_buffers(_meta_model(_preset_config(preset)))
    assert sizes and len(set(sizes)) == 1
    row = _role(_checkpoint("--preset", preset, "--weights", "bf16"), "bias")
    assert row["params"] == (len(sizes) + mtp) * sizes[0]
    assert (row["bytes"], row["format"]) == (4 * row["params"], "fp32")


def test_a_bias_that_is_a_parameter_is_not_listed_again() -> None:
    # Ernie 4.5's routers hold e_score_correction_bias as an nn.Parameter: in the parameter table,
    # so the checkpoint holds what transformers' parameters() counts and lists no score biases.
    model = _meta_model(_preset_config("ernie-4.5-21b-a3b"))
    assert any(n.endswith("e_score_correction_bias") for n, _p in model.named_parameters()) and not _bias_buffers(model)
    c = _checkpoint("--preset", "ernie-4.5-21b-a3b", "--weights", "bf16")
    assert not any(r["role"] == "bias" for r in c["roles"])
    assert c["total_params"] == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(("preset", "key", "value"), [("minimax-m2", "use_routing_bias", False), ("deepseek-v3", "topk_method", "greedy")])
def test_a_config_that_turns_the_bias_off_ships_none(tmp_path: Path, preset: str, key: str, value: object) -> None:
    # transformers builds the bias whatever these keys say; vLLM loads it from the checkpoint only
    # under MiniMax-M2's use_routing_bias (its own config.json: true) and DeepSeek-V3's noaux_tc
    # routing. A config that says otherwise ships none.
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_preset_config(preset), key: value}))
    assert _role(_checkpoint("--preset", preset, "--weights", "bf16"), "bias")["params"] > 0
    assert not any(r["role"] == "bias" for r in _checkpoint("--config", str(path), "--weights", "bf16")["roles"])


# --- ModelOpt's hf_quant_config.json beside a config.json that says no quantization --------------


def _model_dir(tmp_path: Path, sidecar: object, config: dict | None = None) -> Path:  # type: ignore[type-arg]
    from ffn_cli.configs.files import load_preset

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config or dict(load_preset("llama-3.1-8b"))), encoding="utf-8")
    (folder / "hf_quant_config.json").write_text(sidecar if isinstance(sidecar, str) else json.dumps(sidecar), encoding="utf-8")
    return folder


_NVFP4_SIDECAR = {
    "producer": {"name": "modelopt"},
    "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]},
}


def _nvfp4_llama_8b() -> int:
    """Llama-3.1-8B's linears in NVFP4 (e2m1, an e4m3 scale per 16, two fp32 a tensor), the rest bf16."""
    return 32 * sum(o * i // 2 + o * i // 16 + 8 for o, i in _LLAMA_8B) + _LLAMA_8B_REST


@pytest.mark.parametrize("given", ["folder", "file"])
def test_a_sidecar_beside_config_json_is_its_quantization(tmp_path: Path, given: str) -> None:
    # nvidia/DeepSeek-V3.2-NVFP4 and Nemotron 3's NVFP4 checkpoints keep their quantization in
    # hf_quant_config.json, as vLLM reads it: the folder or its config.json, read with it.
    folder = _model_dir(tmp_path, _NVFP4_SIDECAR)
    c = _checkpoint("--config", str(folder if given == "folder" else folder / "config.json"))
    assert c["bytes"] == _nvfp4_llama_8b()
    assert c["origin"].startswith("hf_quant_config.json: modelopt, not converted: LM head")


def test_config_jsons_own_quantization_comes_first(tmp_path: Path) -> None:
    from ffn_cli.configs.files import load_preset

    own = dict(load_preset("llama-3.1-8b")) | {"quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}
    c = _checkpoint("--config", str(_model_dir(tmp_path, _NVFP4_SIDECAR, own)))
    assert c["bytes"] == 32 * sum(o * i + 4 for o, i in _LLAMA_8B) + _LLAMA_8B_REST  # fp8, a float32 scale each


@pytest.mark.parametrize(
    ("sidecar", "said"),
    [("{", "is not valid JSON (line 1"), ({"producer": {}}, 'must hold a "quantization" object'), (None, "is not a regular file")],
)
def test_a_sidecar_that_is_not_modelopts_is_refused(tmp_path: Path, sidecar: object, said: str) -> None:
    folder = _model_dir(tmp_path, sidecar or {})
    if sidecar is None:  # a folder where the file should be
        (folder / "hf_quant_config.json").unlink()
        (folder / "hf_quant_config.json").mkdir()
    result = runner.invoke(app, ["params", "--config", str(folder)])
    assert result.exit_code == 2 and said in result.output and "hf_quant_config.json" in result.output
    assert "Traceback" not in result.output


def test_modelopts_quantization_named_by_its_producer_alone(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Qwen3-32B-FP8-Static-PerTensor's quantization_config names no quant_method, its producer
    # modelopt and quant_algo FP8: e4m3 and a float32 weight_scale and input_scale per linear.
    qc = {"quant_algo": "FP8", "ignore": ["lm_head"], "producer": {"name": "modelopt", "version": "0.31.0"}}
    c = _checkpoint("--config", _config_with(tmp_path, "llama-3.1-8b", qc))
    assert c["bytes"] == 32 * sum(o * i + 8 for o, i in _LLAMA_8B) + _LLAMA_8B_REST
    assert c["origin"].startswith("config.json quantization_config: modelopt, not converted: LM head")


def test_a_sidecar_beside_another_json_file_is_not_read(tmp_path: Path) -> None:
    # Only a config.json (or the folder holding one) is read with the sidecar beside it.
    folder = _model_dir(tmp_path, _NVFP4_SIDECAR)
    other = folder / "other.json"
    other.write_text((folder / "config.json").read_text(encoding="utf-8"), encoding="utf-8")
    result = runner.invoke(app, ["params", "--config", str(other), "--json"])
    assert result.exit_code == 0, result.output
    assert "checkpoint" not in json.loads(result.stdout)
