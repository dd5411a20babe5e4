"""ModelOpt's MIXED_PRECISION checkpoints (nvidia/Qwen3.6-*-NVFP4, nvidia/MiniMax-M3-NVFP4,
nvidia/DeepSeek-V4-*-NVFP4): `quantized_layers` names each quantized module and its quant_algo.
The bytes are held to a second path: transformers' own model built on meta, each parameter's
module looked up in quantized_layers by its name, and priced by hand in the format it names."""

from __future__ import annotations

import json
from math import ceil, prod
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app

runner = CliRunner()

# A Qwen3-MoE of 4 layers, its first a dense MLP (mlp_only_layers), the rest 8 routed experts.
_QWEN3_MOE: dict[str, Any] = {
    "model_type": "qwen3_moe",
    "architectures": ["Qwen3MoeForCausalLM"],
    "hidden_size": 256,
    "intermediate_size": 512,
    "moe_intermediate_size": 128,
    "num_hidden_layers": 4,
    "mlp_only_layers": [0],
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "vocab_size": 1000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


# Bytes of one tensor of n weights in each of ModelOpt's formats, as its checkpoints store them.
def _nvfp4(n: int) -> int:  # e2m1, an e4m3 scale per 16, weight_scale_2 and input_scale (fp32)
    return n // 2 + n // 16 + 8


def _w4a16_nvfp4(n: int) -> int:  # NVFP4's weights and weight_scale_2, no input_scale
    return n // 2 + n // 16 + 4


def _mxfp8(n: int) -> int:  # e4m3 and an e8m0 scale per 32
    return n + n // 32


def _fp8(n: int) -> int:  # e4m3, weight_scale and input_scale (fp32)
    return n + 8


_PRICE = {"NVFP4": _nvfp4, "W4A16_NVFP4": _w4a16_nvfp4, "MXFP8": _mxfp8, "FP8": _fp8}


def _layers() -> dict[str, dict[str, Any]]:
    """Attention in FP8, the dense MLP in MXFP8, the routed experts in NVFP4, the head in
    W4A16_NVFP4: the routers, embeddings and norms unlisted (bf16), as nvidia's checkpoints."""
    listed: dict[str, dict[str, Any]] = {"lm_head": {"quant_algo": "W4A16_NVFP4", "group_size": 16}}
    for i in range(4):
        for p in ("q_proj", "k_proj", "v_proj", "o_proj"):
            listed[f"model.layers.{i}.self_attn.{p}"] = {"quant_algo": "FP8"}
    for p in ("gate_proj", "up_proj", "down_proj"):
        listed[f"model.layers.0.mlp.{p}"] = {"quant_algo": "MXFP8"}
    for i in range(1, 4):
        listed[f"model.layers.{i}.mlp.experts"] = {"quant_algo": "NVFP4", "group_size": 16}
    return listed


def _by_transformers(config: dict[str, Any], listed: dict[str, dict[str, Any]]) -> int:
    """The checkpoint's bytes from transformers' own model on meta: each parameter's module looked
    up in quantized_layers by name; a fused expert tensor (E, rows, cols) is E × its matrices (a
    gate_up one two each), as the checkpoint stores every expert's gate, up and down."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    total = 0
    for name, p in model.named_parameters(remove_duplicate=True):
        module, _, leaf = name.rpartition(".")
        entry = listed.get(module)
        if entry is None:
            total += 2 * p.numel()  # bf16
            continue
        price = _PRICE[entry["quant_algo"]]
        if p.dim() == 3:  # a fused expert tensor
            experts, rows, cols = p.shape
            matrices = experts * (2 if leaf == "gate_up_proj" else 1)
            total += matrices * price(rows * cols // (2 if leaf == "gate_up_proj" else 1))
        else:
            total += price(prod(p.shape))
    return total


def _checkpoint(tmp_path: Path, config: dict[str, Any], *args: str) -> dict[str, Any]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    result = runner.invoke(app, ["params", "--config", str(path), *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["checkpoint"]  # type: ignore[no-any-return]


def _mixed(listed: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": listed, **more}


def test_each_module_in_the_format_quantized_layers_names(tmp_path: Path) -> None:
    listed = _layers()
    c = _checkpoint(tmp_path, _QWEN3_MOE | {"quantization_config": _mixed(listed)})
    assert c["bytes"] == _by_transformers(_QWEN3_MOE, listed)
    formats = {r["role"]: r["format"] for r in c["roles"]}
    assert formats == {
        "embedding": "bf16",
        "attention": "fp8-static",
        "vector": "bf16",
        "dense_ffn": "mxfp8",
        "router": "bf16",
        "experts": "nvfp4",
        "head": "nvfp4-w4a16",
    }
    assert "modelopt MIXED_PRECISION; ModelOpt's quantized_layers: " in c["origin"]
    assert c["origin"].endswith("the rest in bf16")


def test_a_group_size_of_its_own(tmp_path: Path) -> None:
    listed = {k: v | {"group_size": 32} if v["quant_algo"] == "NVFP4" else v for k, v in _layers().items()}
    c = _checkpoint(tmp_path, _QWEN3_MOE | {"quantization_config": _mixed(listed)})
    experts = next(r for r in c["roles"] if r["role"] == "experts")
    n = 128 * 256
    assert experts["format"] == "nvfp4-g32" and experts["bytes"] == 3 * 8 * 3 * (n // 2 + n // 32 + 8)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"model.layers.1.mlp.experts": {"quant_algo": "W4A8_AWQ"}}, "quant_algo 'W4A8_AWQ' is not read"),
        ({"model.layers.0.mystery": {"quant_algo": "FP8"}}, "model.layers.0.mystery: ffn cannot say which tensors they are"),
        ({"model.layers.3.self_attn.o_proj": {"quant_algo": "NVFP4"}}, "store the attention projections in fp8-static, nvfp4"),
    ],
)
def test_what_ffn_cannot_price_leaves_the_size_unshown(tmp_path: Path, change: dict[str, Any], said: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_QWEN3_MOE | {"quantization_config": _mixed(_layers() | change)}), encoding="utf-8")
    result = runner.invoke(app, ["params", "--config", str(path), "--json"])
    assert result.exit_code == 0, result.output
    c = json.loads(result.stdout)["checkpoint"]  # the model as --dtype stores it, the note saying why
    assert c["origin"] == "bf16 everywhere (--dtype)" and not c["formats_by_role"]
    assert said in c["note"] and c["note"].endswith("its weights are priced in --dtype instead")


def test_an_entry_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_QWEN3_MOE | {"quantization_config": _mixed({"lm_head": "NVFP4"})}), encoding="utf-8")
    result = runner.invoke(app, ["params", "--config", str(path)])
    assert result.exit_code == 2
    assert "quantization_config.quantized_layers.lm_head" in result.output and "Traceback" not in result.output


def test_deepseek_v4s_nvfp4_experts_over_its_fp8_linears(tmp_path: Path) -> None:
    # nvidia/DeepSeek-V4-Flash-NVFP4: DeepSeek's quantization_config (fp8 blocks, expert_dtype
    # fp4) with ModelOpt's MIXED_PRECISION over it, its quantized_layers the 43 layers' routed
    # experts in NVFP4; the MTP layer, which they do not list, keeps DeepSeek's formats.
    from ffn_cli.configs.files import load_preset

    config = dict(load_preset("deepseek-v4-flash"))
    base = _checkpoint(tmp_path, config)
    listed = {f"layers.{i}.ffn.experts": {"quant_algo": "NVFP4", "group_size": 16} for i in range(43)}
    qc = dict(config["quantization_config"]) | {"quant_algo": "MIXED_PRECISION", "quantized_layers": listed}
    mixed = _checkpoint(tmp_path, config | {"quantization_config": qc})
    rows = {r["role"]: r for r in mixed["roles"]}
    before = {r["role"]: r for r in base["roles"]}
    # 43 layers × 256 experts × 3 matrices of 2,048 × 4,096 (d_model 4,096, moe_intermediate 2,048)
    n = 2048 * 4096
    assert rows["experts"]["params"] == 43 * 256 * 3 * n and rows["experts"]["format"] == "nvfp4"
    assert rows["experts"]["bytes"] == 43 * 256 * 3 * _nvfp4(n)
    assert before["experts"]["format"] == "mxfp4"  # expert_dtype fp4: e2m1 and an e8m0 scale per 32
    for role in set(rows) - {"experts"}:
        assert (role, rows[role]["bytes"], rows[role]["format"]) == (role, before[role]["bytes"], before[role]["format"])
    kept = "the multi-token prediction layers in bf16, fp8-block-128x128, mxfp4"
    assert kept in mixed["origin"]
    assert mixed["bytes"] - base["bytes"] == 43 * 256 * 3 * (_nvfp4(n) - (n // 2 + ceil(n / 32)))


def test_a_module_no_entry_names_stays_in_the_rest(tmp_path: Path) -> None:
    # q, k and v listed, o_proj not: o_proj stays bf16, as transformers' module names say.
    listed = {k: v for k, v in _layers().items() if not k.endswith("o_proj")}
    c = _checkpoint(tmp_path, _QWEN3_MOE | {"quantization_config": _mixed(listed)})
    assert c["bytes"] == _by_transformers(_QWEN3_MOE, listed)
    assert next(r for r in c["roles"] if r["role"] == "attention")["format"] == "mixed"


def test_a_role_listed_in_some_of_its_layers_leaves_the_size_unread(tmp_path: Path) -> None:
    listed = {k: v for k, v in _layers().items() if "layers.3.self_attn" not in k}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_QWEN3_MOE | {"quantization_config": _mixed(listed)}), encoding="utf-8")
    result = runner.invoke(app, ["params", "--config", str(path), "--json"])
    assert result.exit_code == 0, result.output
    c = json.loads(result.stdout)["checkpoint"]
    said = "quantized_layers list the q_proj (attention projections) of layers 0–2, not 3: its weights are priced in --dtype instead"
    assert c["origin"] == "bf16 everywhere (--dtype)" and said in c["note"]


def test_weights_asked_keep_the_mtp_layers_a_list_leaves_alone() -> None:
    # Qwen3.6-35B-A3B's NVFP4 checkpoint lists no MTP module: --weights nvfp4 converts what it
    # quantizes, the MTP layer stays bf16 (2 bytes a parameter), as it ships.
    result = runner.invoke(app, ["params", "--preset", "qwen3.6-35b-a3b-nvfp4", "--weights", "nvfp4", "--json"])
    assert result.exit_code == 0, result.output
    mtp = next(r for r in json.loads(result.stdout)["checkpoint"]["roles"] if r["role"] == "mtp")
    assert (mtp["format"], mtp["bytes"]) == ("bf16", 2 * mtp["params"])


def test_a_whole_layer_left_out_is_its_roles_left_out() -> None:
    # nvidia/Kimi-K2.6-NVFP4 leaves language_model.model.layers.0* out: its dense FFN (layer 0's
    # alone) stays bf16; attention, left out by name, is in every layer.
    result = runner.invoke(app, ["params", "--preset", "kimi-k2.6-nvfp4", "--json"])
    assert result.exit_code == 0, result.output
    c = json.loads(result.stdout)["checkpoint"]
    dense = next(r for r in c["roles"] if r["role"] == "dense_ffn")
    assert (dense["format"], dense["params"], dense["bytes"]) == ("bf16", 3 * 7168 * 18432, 2 * 3 * 7168 * 18432)
    assert "layers.0*" not in c["note"]


def test_a_module_listed_in_some_layers_leaves_the_size_unread(tmp_path: Path) -> None:
    # q_proj listed in layers 0–2 alone, k, v and o in every layer: layer 3's q_proj in neither format.
    listed = {k: v for k, v in _layers().items() if k != "model.layers.3.self_attn.q_proj"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_QWEN3_MOE | {"quantization_config": _mixed(listed)}), encoding="utf-8")
    result = runner.invoke(app, ["params", "--config", str(path), "--json"])
    assert result.exit_code == 0, result.output
    said = "quantized_layers list the q_proj (attention projections) of layers 0–2, not 3: its weights are priced in --dtype instead"
    assert said in json.loads(result.stdout)["checkpoint"]["note"]


def test_a_module_left_out_in_some_layers_is_stored_so_there(tmp_path: Path) -> None:
    # ModelOpt's NVFP4 with layer 1's q_proj left out (Nemotron 3 Nano leaves the Mamba projections
    # before each attention layer so): that layer's q_proj bf16, the other layers' NVFP4, as
    # transformers' module names price them; routers and the head as ModelOpt leaves them.
    every = {k: {"quant_algo": "NVFP4", "group_size": 16} for k in _layers() if k != "lm_head"}
    every.pop("model.layers.1.self_attn.q_proj")
    qc = {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["lm_head", "model.layers.1.self_attn.q_proj"]}
    c = _checkpoint(tmp_path, _QWEN3_MOE | {"quantization_config": qc})
    assert c["bytes"] == _by_transformers(_QWEN3_MOE, every)
    assert "q_proj left out in layers 1" in c["origin"]
