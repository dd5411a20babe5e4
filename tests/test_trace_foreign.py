"""`ffn trace --config` on a model_type no reader knows: the model's own FFN module, built by
transformers on meta and traced; FLOPs held against FlopCounterMode on the same module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from typer.testing import CliRunner

from ffn_cli.cli import app

transformers = pytest.importorskip("transformers")

from ffn_cli.models import meta_build  # noqa: E402
from tests.tiny_families import tiny_config  # noqa: E402


def _write(tmp_path: Path, model_type: str) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny_config(model_type)))
    return str(path)


@pytest.mark.parametrize("model_type", ["cohere", "jamba", "stablelm"])
def test_the_models_own_ffn_is_traced(tmp_path: Path, model_type: str) -> None:
    result = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, model_type), "-b", "2", "-s", "3", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    model, _config, _notes = meta_build.build_on_meta(tiny_config(model_type))
    found = meta_build.find_ffn_module(model, 0)
    assert found is not None and data["module_path"] == found.path
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        found.module(torch.empty(2, 3, data["input_shape"][-1], device="meta"))
    assert data["matmul_flops"] == counter.get_total_flops()
    assert data["params"] == sum(p.numel() for p in found.module.parameters())
    assert sum(s["params"] for s in data["steps"]) == data["params"]  # the rows add up to the total
    assert data["output_shape"] == data["input_shape"] == [2, 3, data["input_shape"][-1]]


def test_the_table_at_80_columns(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, "cohere")], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "model.layers.0.mlp" in result.stdout and "built by transformers" in result.stdout
    assert all(len(line) <= 80 for line in result.stdout.splitlines())


def test_no_single_ffn_module_is_said_plainly(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, "mamba")])
    assert result.exit_code == 1
    assert "no single FFN module to trace" in result.stderr and result.stderr.count("\n") == 1


def test_a_routed_moe_layer_is_refused_not_undercounted(tmp_path: Path) -> None:
    # jamba's odd layers are MoE here: on meta no expert would run, and the FLOPs would be short.
    result = CliRunner().invoke(app, ["trace", "--config", _write(tmp_path, "jamba"), "--layer", "1"])
    assert result.exit_code == 1
    assert "routes tokens to experts by value" in result.stderr and result.stderr.count("\n") == 1


def test_bench_says_what_it_cannot_time(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "--config", _write(tmp_path, "cohere")])
    assert result.exit_code == 1
    assert "ffn trace --config traces this model's own FFN module" in result.stderr and result.stderr.count("\n") == 1
