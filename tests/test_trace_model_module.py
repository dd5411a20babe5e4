"""`ffn trace --config` on a model_type no reader knows: the model's own FFN module, built by
transformers and traced through the same pipeline as any module; parameters held against the
module, matmul FLOPs against FlopCounterMode (and, for fused experts, against the config)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from typer.testing import CliRunner

from ffn_cli.cli import app

transformers = pytest.importorskip("transformers")

from ffn_cli.configs import meta_build  # noqa: E402
from tests.tiny_families import tiny_config  # noqa: E402


def _write(tmp_path: Path, model_type: str) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny_config(model_type)))
    return str(path)


def _trace(tmp_path: Path, model_type: str, *extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, model_type), "-b", "2", "-s", "3", "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("device", ["meta", "cpu"])
@pytest.mark.parametrize("model_type", ["cohere", "jamba", "stablelm"])
def test_the_models_own_ffn_is_traced(tmp_path: Path, model_type: str, device: str) -> None:
    data = _trace(tmp_path, model_type, "--device", device)
    model, _config, _notes = meta_build.build_on_meta(tiny_config(model_type))
    found = meta_build.find_ffn_module(model, 0)
    assert found is not None and data["module"]["name"] == found.path and data["module"]["source"] == "transformers"
    assert data["spec"] is None and data["device"] == device
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        found.module(torch.empty(2, 3, data["input_shape"][-1], device="meta"))
    assert data["matmul_flops"] == counter.get_total_flops()
    assert data["total_params"] == sum(p.numel() for p in found.module.parameters())
    assert sum(s["param_count"] for s in data["steps"]) == data["total_params"]  # the rows add up to the total
    assert data["output_shape"] == data["input_shape"] == [2, 3, data["input_shape"][-1]]
    assert (data["input_stats"] is None) == (device == "meta")


def test_a_routed_moe_layer_runs_with_real_routing_on_cpu(tmp_path: Path) -> None:
    # jamba's odd layers are MoE: on CPU its own router picks top-k experts for every token.
    data = _trace(tmp_path, "jamba", "--layer", "1")
    config = tiny_config("jamba")
    model, _config, _notes = meta_build.build_on_meta(config)
    found = meta_build.find_ffn_module(model, 1)
    assert found is not None and data["total_params"] == sum(p.numel() for p in found.module.parameters())
    d, f, k, tokens = config["hidden_size"], config["intermediate_size"], config["num_experts_per_tok"], 2 * 3
    router = 2 * tokens * d * config["num_experts"]
    # every token meets exactly k experts: gate and up (2·d·2f), down (2·f·d) per pair
    assert data["matmul_flops"] == router + tokens * k * (2 * d * 2 * f + 2 * f * d)
    assert any("seeded random" in n for n in data["module"]["notes"])


def test_the_table_at_80_columns(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, "cohere"), "--device", "meta"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "model.layers.0.mlp" in result.stdout and "CohereMLP" in result.stdout
    assert all(len(line) <= 80 for line in result.stdout.splitlines())


def test_no_single_ffn_module_is_said_plainly(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, "mamba")])
    assert result.exit_code == 1
    assert "no single FFN module to trace" in result.stderr and result.stderr.count("\n") == 1


def test_a_routed_moe_layer_on_meta_is_its_layouts_ffn_not_undercounted(tmp_path: Path) -> None:
    # transformers' own MoE block routes by values meta does not hold (its experts would run on no
    # token): Jamba's layer 1 is traced as ffn's FFN of the shapes its layout reads, routed evenly,
    # and the header says so; its dense layer 0 is transformers' own module, as before.
    result = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, "jamba"), "--layer", "1", "--device", "meta", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert any("routes by values the meta device does not hold" in n for n in data["model"]["not_built"])
    assert data["spec"]["variant"] == "moe" and data["spec"]["experts"] == 4 and data["spec"]["top_k"] == 2
    ok = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, "jamba"), "--layer", "0", "--device", "meta", "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["module"]["source"] == "transformers"


def test_a_routed_layer_ffn_cannot_lay_out_is_refused_on_meta(tmp_path: Path) -> None:
    # NLLB-MoE's layout is not read: its own MoE block on meta would be undercounted, so its routed
    # layer is refused in one line, the CPU offered.
    result = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, "nllb-moe"), "--layer", "1", "--device", "meta"])
    assert result.exit_code == 1
    assert "routes tokens to experts by value" in result.stderr and result.stderr.count("\n") == 1


def test_a_routed_layer_of_a_read_layout_traces_as_ffns_moe_on_meta(tmp_path: Path) -> None:
    # Switch Transformers' layout is read (its router's class says top-1): on meta, its routed layer
    # is ffn's MoE of its layout's shapes, 4 experts of d_ff 128, one a token.
    data = _trace(tmp_path, "switch_transformers", "--layer", "1", "--device", "meta")
    spec = data["spec"]
    assert spec["variant"] == "moe" and spec["experts"] == 4 and spec["top_k"] == 1 and spec["d_ff"] == 128


def test_check_is_refused_for_a_models_own_module(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, "cohere"), "--check"])
    assert result.exit_code == 2 and "--check" in result.stderr and result.stderr.count("\n") == 1


def test_bench_says_what_it_cannot_time(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "--config", _write(tmp_path, "cohere")])
    assert result.exit_code == 1
    assert "ffn trace --config traces this model's own FFN module" in result.stderr and result.stderr.count("\n") == 1
