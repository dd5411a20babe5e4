"""Asymmetric integer formats (a zero point per group, as AWQ and GPTQ ship them): exact bits
per weight by hand, their quantization_config read, and a published GPTQ checkpoint's size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.hardware.formats import parse_format

runner = CliRunner()
PRESETS = Path(__file__).resolve().parent.parent / "ffn_cli" / "presets"


def _json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("name", "bits"),
    [
        ("int4-asym", 4 + (16 + 4) / 128),  # one bf16 scale and one 4-bit zero point per 128
        ("int4-g32-fp16-asym", 4 + (16 + 4) / 32),
        ("int4-g64-fp32-asym", 4 + (32 + 4) / 64),
        ("awq-int4", 4 + (16 + 4) / 128),  # AWQ: fp16 scale + 4-bit zero per 128 (qzeros)
        ("awq-int4-g64", 4 + (16 + 4) / 64),
        ("gptq-int4", 4 + (16 + 4) / 128),  # g_idx, per column, is not in the unbounded figure
        ("gptq-int8-g32", 8 + (16 + 8) / 32),  # GPTQ's zero point is as wide as its weights
        ("gptq-int3-g128", 3 + (16 + 3) / 128),
    ],
)
def test_asymmetric_bits_per_weight_by_hand(name: str, bits: float) -> None:
    assert float(parse_format(name).bits_per_weight()) == bits


@pytest.mark.parametrize(
    ("name", "shape", "bytes_"),
    [
        # (out 11008, in 4096), groups of 128 along the input: 32 a row, each an fp16 scale and a 4-bit zero.
        ("awq-int4", (11008, 4096), 11008 * 4096 // 2 + 11008 * 32 * 2 + 11008 * 32 // 2),
        # GPTQ also keeps g_idx, one int32 per input column (4096 of them), and AutoGPTQ an fp16 bias a row.
        ("gptq-int4", (11008, 4096), 11008 * 4096 // 2 + 11008 * 32 * 2 + 11008 * 32 // 2 + 4096 * 4 + 11008 * 2),
        # A group that does not fill gets its own scale and zero: 100 columns in groups of 64 → 2.
        ("int4-g64-fp16-asym", (10, 100), 10 * 100 // 2 + 10 * 2 * 2 + 10 * 2 // 2),
        # int8 per row: one bf16 scale and one int8 zero point a row.
        ("int8-asym", (10, 6), 60 + 10 * 2 + 10),
        # Stacked experts (8, out 64, in 256): g_idx for each expert's 256 columns.
        ("gptq-int4-g128", (8, 64, 256), 8 * 64 * 256 // 2 + 8 * 64 * 2 * 2 + 8 * 64 * 2 // 2 + 8 * 256 * 4 + 8 * 64 * 2),
    ],
)
def test_asymmetric_tensor_bytes_by_hand(name: str, shape: tuple[int, ...], bytes_: int) -> None:
    assert parse_format(name).tensor_bits(shape) == 8 * bytes_


def test_asymmetric_formats_are_named_and_described() -> None:
    assert parse_format("int4-asym").name == "int4-g128-bf16-asym"
    text = parse_format("gptq-int4").describe()
    assert "one fp16 scale and one int4 zero point per 128" in text and "int32 group index per input column" in text
    result = runner.invoke(app, ["params", "--preset", "gpt2", "--weights", "int4-sym"])
    assert result.exit_code == 2 and "-asym" in result.stderr and "gptq-intB" in result.stderr


def _config(tmp_path: Path, preset: str, qc: dict[str, Any]) -> str:
    config = json.loads((PRESETS / f"{preset}.json").read_text(encoding="utf-8")) | {"quantization_config": qc}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return str(path)


# TheBloke/Llama-2-13B-GPTQ's config.json (main branch): AutoGPTQ, 4 bits, group 128, sym.
GPTQ_MAIN = {
    "bits": 4,
    "group_size": 128,
    "damp_percent": 0.01,
    "desc_act": False,
    "sym": True,
    "true_sequential": True,
    "quant_method": "gptq",
}


def _llama_2_13b_gptq_bytes(group: int) -> int:
    """By hand: 40 layers of q, k, v, o (5,120 × 5,120) and gate, up (13,824 × 5,120), down
    (5,120 × 13,824) in int4, per group of the input an fp16 scale and a 4-bit zero point,
    g_idx an int32 per input column, an fp16 bias per output row (AutoGPTQ's zeros); the
    embeddings and the head (32,000 × 5,120) and the 81 RMSNorm weights (5,120 each) in fp16."""
    d, ff, layers, vocab = 5120, 13824, 40, 32000
    weights = 4 * d * d + 3 * d * ff
    groups = 4 * d * (d // group) + 2 * ff * (d // group) + d * -(-ff // group)
    columns = 6 * d + ff
    rows = 4 * d + 2 * ff + d
    per_layer = weights // 2 + groups * (16 + 4) // 8 + columns * 4 + rows * 2
    return layers * per_layer + 2 * vocab * d * 2 + (2 * layers + 1) * d * 2


@pytest.mark.parametrize(("group", "gb"), [(128, 7.26), (32, 8.00), (64, 7.51)])
def test_llama_2_13b_gptq_checkpoint_matches_its_model_card(tmp_path: Path, group: int, gb: float) -> None:
    # TheBloke/Llama-2-13B-GPTQ's model card, "Provided files": main (4 bits, group 128) 7.26 GB,
    # gptq-4bit-32g-actorder_True 8.00 GB, gptq-4bit-64g-actorder_True 7.51 GB (GB = 10⁹ bytes,
    # as the Hub shows them). The 64g branch matches only with AutoGPTQ's zero biases counted.
    qc = GPTQ_MAIN | {"group_size": group, "desc_act": group != 128}
    data = _json("params", "--config", _config(tmp_path, "llama-2-13b", qc))
    c = data["checkpoint"]
    assert c["bytes"] == _llama_2_13b_gptq_bytes(group)
    assert round(c["bytes"] / 1e9, 2) == gb
    assert c["quantized_roles"] == ["attention", "dense_ffn"]
    assert c["rest_format"] == "fp16"  # a GPTQ checkpoint keeps the rest in fp16, as its kernels run
    # Without its zero points the same checkpoint would be 7.21 GB at group 128: they are counted.
    if group == 128:
        assert round((c["bytes"] - 40 * (4 * 5120 * 40 + 3 * 13824 * 40) // 2) / 1e9, 2) == 7.21
    if group == 64:  # without the zero biases, 7.50 GB: the card's 7.51 needs them
        assert round((c["bytes"] - 40 * (4 * 5120 + 2 * 13824 + 5120) * 2) / 1e9, 2) == 7.50


def test_gptq_sym_or_not_stores_the_same_bytes(tmp_path: Path) -> None:
    # AutoGPTQ keeps qzeros and g_idx whatever `sym` says: the size does not change.
    sym = _json("params", "--config", _config(tmp_path, "llama-2-7b", GPTQ_MAIN))["checkpoint"]["bytes"]
    asym = _json("params", "--config", _config(tmp_path, "llama-2-7b", GPTQ_MAIN | {"sym": False}))["checkpoint"]["bytes"]
    assert sym == asym


def test_gptq_per_row_is_one_group_a_row(tmp_path: Path) -> None:
    # group_size -1: one fp16 scale and one 4-bit zero per output row, g_idx per input column.
    d, ff, layers, vocab = 4096, 11008, 32, 32000
    weights = 4 * d * d + 3 * d * ff
    rows = 4 * d + 2 * ff + d
    per_layer = weights // 2 + rows * 20 // 8 + (6 * d + ff) * 4 + rows * 2  # and a zero fp16 bias a row
    data = _json("params", "--config", _config(tmp_path, "llama-2-7b", GPTQ_MAIN | {"group_size": -1}))
    assert data["checkpoint"]["bytes"] == layers * per_layer + 2 * vocab * d * 2 + (2 * layers + 1) * d * 2


def test_awq_config_is_read_with_its_zero_points(tmp_path: Path) -> None:
    # AutoAWQ's GEMM checkpoint of Llama-2-7B: 4 bits, group 128, zero points; a module kept out.
    qc = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm", "modules_to_not_convert": None}
    d, ff, layers, vocab = 4096, 11008, 32, 32000
    weights = 4 * d * d + 3 * d * ff
    groups = (4 * d + 2 * ff) * (d // 128) + d * -(-ff // 128)
    per_layer = weights // 2 + groups * 20 // 8
    data = _json("params", "--config", _config(tmp_path, "llama-2-7b", qc))
    assert data["checkpoint"]["bytes"] == layers * per_layer + 2 * vocab * d * 2 + (2 * layers + 1) * d * 2
    assert data["checkpoint"]["format"]["name"] == "awq-int4-g128"
    kept = _json("params", "--config", _config(tmp_path, "llama-2-7b", qc | {"modules_to_not_convert": ["mlp"]}))
    assert kept["checkpoint"]["quantized_roles"] == ["attention"]


@pytest.mark.parametrize(
    "qc",
    [
        {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False},
        {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemv"},
        {"quant_method": "gptq", "bits": 5, "group_size": 128},
    ],
)
def test_integer_configs_ffn_does_not_read_say_so(tmp_path: Path, qc: dict[str, Any]) -> None:
    data = _json("params", "--config", _config(tmp_path, "llama-2-7b", qc))
    assert "not read" in data["checkpoint"]["note"]


def test_gptqmodel_checkpoints_store_no_zero_biases(tmp_path: Path) -> None:
    # GPTQModel names itself in meta.quantizer and leaves AutoGPTQ's zero biases out: 32 layers of
    # Llama-2-7B's q, k, v, o, gate, up (4,096 + 2 · 11,008 … rows) times 2 bytes fewer.
    auto = _json("params", "--config", _config(tmp_path, "llama-2-7b", GPTQ_MAIN))["checkpoint"]["bytes"]
    qc = GPTQ_MAIN | {"meta": {"quantizer": ["gptqmodel:2.2.0"]}}
    (tmp_path / "m").mkdir()
    model = _json("params", "--config", _config(tmp_path / "m", "llama-2-7b", qc))["checkpoint"]["bytes"]
    assert auto - model == 32 * (4 * 4096 + 2 * 11008 + 4096) * 2
