"""`ffn params` through the CLI: one FFN, comparisons, --match-params, whole models, errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from ffn_cli.attention import AttentionSpec
from ffn_cli.cli import app
from ffn_cli.configs.files import preset_names
from ffn_cli.configs.source import preset_model
from ffn_cli.models.comparison import compare_variants
from ffn_cli.models.count import count_model
from ffn_cli.models.layer import ffn_report
from ffn_cli.render.params.comparison import comparison_table
from ffn_cli.render.params.model import model_view
from ffn_cli.render.params.report import ffn_report_view
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS

CONFIGS = Path(__file__).parent / "data" / "configs"


def _json(runner: CliRunner, *args: str) -> Any:
    result = runner.invoke(app, ["params", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _fails(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(app, ["params", *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output


# --- one FFN ---------------------------------------------------------------------------------


def test_tutorial_check_relu_512(runner: CliRunner) -> None:
    data = _json(runner, "--variant", "relu", "--d-model", "512")
    assert data["total_params"] == 2_099_712
    assert data["attention_params"] == 1_050_624
    assert round(data["ffn_attention_ratio"], 1) == 2.0
    assert data["ffn_share_of_block"] == pytest.approx(2 / 3, abs=0.001)
    assert data["param_formula"] == "2·d·d_ff + d_ff + d"
    assert data["attention"]["param_formula"] == "4·d² + 4·d"
    assert sum(t["count"] for t in data["tensors"]) == data["total_params"]


def test_table_shows_tensors_formula_flops_and_attention(runner: CliRunner) -> None:
    result = runner.invoke(app, ["params", "-v", "relu", "-d", "512"])
    assert result.exit_code == 0, result.output
    for text in ("up_proj.weight", "(2048, 512)", "1,048,576", "2,099,712", "2·d·d_ff + d_ff + d", "1,050,624", "4·d² + 4·d", "66.7%"):
        assert text in result.output, text


def test_bytes_flops_and_activations_follow_dtype(runner: CliRunner) -> None:
    data = _json(runner, "-v", "swiglu", "-d", "4096", "--dtype", "bfloat16")
    assert data["dtype"] == "bfloat16"
    assert data["total_params"] == 3 * 4096 * 11008
    assert all(t["bytes"] == 2 * t["count"] for t in data["tensors"])
    assert data["bytes"] == 2 * data["total_params"]
    assert data["training_flops_per_token"] == 3 * data["flops_per_token"]
    assert data["matmul_flops_per_token"] == 2 * data["total_params"]  # no biases: 2 FLOPs per weight
    assert data["activation_bytes_per_token"] == 2 * data["activation_elements_per_token"]


def test_grouped_query_attention_and_attention_bias(runner: CliRunner) -> None:
    data = _json(runner, "-v", "swiglu", "-d", "4096", "--n-heads", "32", "--n-kv-heads", "8")
    assert data["attention_params"] == 41_943_040  # Mixtral's attention; swiglu has no biases
    assert data["attention"]["param_formula"] == "2·d·q + 2·d·kv"
    biased = _json(runner, "-v", "swiglu", "-d", "4096", "--n-heads", "32", "--n-kv-heads", "8", "--attn-bias")
    assert biased["attention_params"] == 41_943_040 + 4096 + 2 * 1024 + 4096
    unbiased = _json(runner, "-v", "relu", "-d", "512", "--no-attn-bias")
    assert unbiased["attention_params"] == 4 * 512 * 512


def test_moe_total_active_router_and_shared_experts(runner: CliRunner) -> None:
    data = _json(runner, "-v", "moe", "-d", "4096", "--d-ff", "14336", "--shared-experts", "1", "-E", "8", "-k", "2")
    names = {t["name"]: t for t in data["tensors"]}
    assert names["router.weight"]["shape"] == [8, 4096]
    assert names["experts.*.gate_proj.weight"]["copies"] == 8
    assert "shared_experts.down_proj.weight" in names
    expert = 3 * 4096 * 14336
    assert data["total_params"] == 8 * 4096 + 9 * expert
    assert data["active_params"] == 8 * 4096 + 3 * expert
    assert data["all_experts_flops_per_token"] > data["flops_per_token"]
    assert data["ffn_active_attention_ratio"] < data["ffn_attention_ratio"]


# --- variants side by side -------------------------------------------------------------------


def test_comparison_of_a_list_and_of_all(runner: CliRunner) -> None:
    data = _json(runner, "--variant", "relu,gelu,swiglu,moe")
    assert [v["spec"]["variant"] for v in data["variants"]] == ["relu", "gelu", "swiglu", "moe"]
    assert data["match_params"] is False and data["target_params"] is None
    every = _json(runner, "--variant", "all")
    assert [v["spec"]["variant"] for v in every["variants"]] == list(VARIANTS)


def test_comparison_attention_does_not_depend_on_the_order(runner: CliRunner) -> None:
    """One attention for every row: 4·d² without biases (swiglu has none), in either order."""
    forward, backward = _json(runner, "-v", "relu,swiglu", "-d", "1024"), _json(runner, "-v", "swiglu,relu", "-d", "1024")
    rows = [*forward["variants"], *backward["variants"]]
    assert {v["attention_params"] for v in rows} == {4 * 1024 * 1024}
    ratios = {v["spec"]["variant"]: v["ffn_attention_ratio"] for v in forward["variants"]}
    assert ratios == {v["spec"]["variant"]: v["ffn_attention_ratio"] for v in backward["variants"]}
    biased = _json(runner, "-v", "relu,gelu", "-d", "1024")["variants"]
    assert {v["attention_params"] for v in biased} == {4 * 1024 * 1024 + 4 * 1024}


def test_match_params_sizes_each_variant_to_the_first(runner: CliRunner) -> None:
    data = _json(runner, "-v", "relu,gelu,swiglu", "-d", "4096", "--match-params")
    relu, gelu, swiglu = data["variants"]
    assert data["target_params"] == relu["total_params"]
    assert gelu["spec"]["d_ff"] == relu["spec"]["d_ff"] == 16384
    assert swiglu["spec"]["d_ff"] == 11008  # the 2/3 rule, rounded to 256
    assert abs(swiglu["match_delta"]) < 0.01
    fine = _json(runner, "-v", "relu,swiglu", "-d", "4096", "--match-params", "--multiple-of", "1")
    assert abs(fine["variants"][1]["match_delta"]) < 1e-4
    table = runner.invoke(app, ["params", "-v", "relu,swiglu", "-d", "4096", "--match-params"]).output
    assert "11,008" in table and "Δ params" in table


def test_match_params_needs_two_variants(runner: CliRunner) -> None:
    assert "--match-params:" in _fails(runner, "-v", "relu", "--match-params")


# --- whole models ----------------------------------------------------------------------------


def test_preset_json_has_the_model_keys(runner: CliRunner) -> None:
    data = _json(runner, "--preset", "mixtral-8x7b")
    assert data["total_params"] == 46_702_792_704
    assert data["active_params"] == 12_879_925_248
    assert data["attention_params"] == 32 * 41_943_040
    assert data["ffn_params"] == 32 * 1_409_318_912
    assert round(data["ffn_attention_ratio"], 2) == 33.60
    assert data["training_memory"]["total_bytes"] == 16 * data["total_params"]
    assert sum(p["params"] for p in data["parts"]) == data["total_params"]


def test_config_file_and_directory(runner: CliRunner, tmp_path: Path) -> None:
    assert _json(runner, "--config", str(CONFIGS / "gpt2.json"))["total_params"] == 124_439_808
    (tmp_path / "config.json").write_text((CONFIGS / "bert-base-uncased.json").read_text())
    assert _json(runner, "--config", str(tmp_path))["total_params"] == 109_482_240


def test_model_table(runner: CliRunner) -> None:
    result = runner.invoke(app, ["params", "--preset", "llama-2-7b"])
    assert result.exit_code == 0, result.output
    for text in ("6,738,415,616", "67,108,864", "135,266,304", "2.016×", "untied", "training memory"):
        assert text in result.output, text


def test_list_presets(runner: CliRunner) -> None:
    result = runner.invoke(app, ["params", "--list-presets"])
    assert result.exit_code == 0
    assert all(name in result.output for name in preset_names())
    rows = _json(runner, "--list-presets")
    assert {r["name"]: r["total_params"] for r in rows}["gpt2"] == 124_439_808


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "gpt5"], "--preset gpt5: no such preset; did you mean"),
        (["--config", "/nonexistent/config.json"], "no such file"),
        (["--preset", "gpt2", "--d-model", "1024"], "--d-model 1024: sizes one FFN"),
        (["--preset", "gpt2", "--variant", "swiglu"], "--variant swiglu: sizes one FFN"),
        (["--preset", "gpt2", "--config", "x.json"], "--config x.json: no such file"),
        (["--variant", "relu,wat"], "--variant wat: no such variant"),
        (["--variant", "relu,all"], "--variant all: no such variant"),
        (["--dtype", "int3"], "--dtype int3: choose one of"),
        (["--variant", "relu", "--fused"], "--fused: relu does not use it"),
        (["--d-model", "512", "--n-heads", "7"], "--n-heads 7: must divide d_model"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(runner: CliRunner, args: list[str], message: str) -> None:
    output = _fails(runner, *args)
    assert message in output
    assert output.strip().count("\n") == 0


def test_non_json_config(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("model_type: llama\n")
    assert "not valid JSON" in _fails(runner, "--config", str(path))


# --- torch stays out, and golden tables --------------------------------------------------------


def test_params_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from ffn_cli.cli import app\n"
        "runs = (['-v', 'moe', '--shared-experts', '1'], ['-v', 'relu,gelu,swiglu,moe', '--match-params'],\n"
        "        ['--preset', 'mixtral-8x7b'], ['--preset', 'deepseek-moe-16b', '--json'], ['--list-presets'],\n"
        "        ['--lang', 'zh', '--preset', 'llama-3.1-8b', '--explain'], ['-v', 'moe', '--explain'],\n"
        f"        ['--config', {str(CONFIGS / 'gpt2.json')!r}])\n"
        "for args in runs:\n"
        "    result = CliRunner().invoke(app, ['params', *args])\n"
        "    assert result.exit_code == 0, (args, result.output)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def _render(renderable: Any, width: int = 100) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [80, 120])
def test_golden_tutorial_ffn(golden: Any, width: int) -> None:
    report = ffn_report(FFNSpec(variant="relu", d_model=512), AttentionSpec(512))
    golden(f"params_relu_512_{width}.txt", _render(ffn_report_view(report), width))


@pytest.mark.parametrize("width", [80, 120])
def test_golden_comparison(golden: Any, width: int) -> None:
    specs = [FFNSpec(variant=v, d_model=4096) for v in ("relu", "gelu", "swiglu", "moe")]
    comparison = compare_variants(specs, AttentionSpec(4096, qkv_bias=True, o_bias=True), match_params=True)
    golden(f"params_match_4096_{width}.txt", _render(comparison_table(comparison), width))


@pytest.mark.parametrize("width", [80, 120])
def test_golden_model(golden: Any, width: int) -> None:
    golden(f"params_mixtral_8x7b_{width}.txt", _render(model_view(count_model(preset_model("mixtral-8x7b"))), width))


def test_presets_configs_and_models_compare_in_one_table(runner: CliRunner, tmp_path: Path) -> None:
    # --config a.json,b.json was refused, and a preset could not stand beside a config.
    from ffn_cli.configs.files import load_preset

    (tmp_path / "a.json").write_text(json.dumps(load_preset("qwen2-0.5b")))
    (tmp_path / "b.json").write_text(json.dumps(load_preset("gpt2")))
    configs = f"{tmp_path / 'a.json'},{tmp_path / 'b.json'}"
    result = runner.invoke(app, ["params", "--preset", "llama-2-7b", "--config", configs, "--json"])
    assert result.exit_code == 0, result.output
    totals = [m["total_params"] for m in json.loads(result.stdout)["models"]]
    assert totals == [6_738_415_616, 494_032_768, 124_439_808]  # published totals, in the order given: presets, configs
    table = runner.invoke(app, ["params", "--preset", "llama-2-7b", "--config", configs], env={"COLUMNS": "80"}).stdout
    assert "models side by side" in table and "Qwen/Qwen2-0.5B" in table and "6.74 G" in table


def test_a_model_no_one_knows_is_refused_in_a_comparison(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "u.json").write_text(json.dumps({"model_type": "no_such_family", "hidden_size": 8}))
    output = _fails(runner, "--preset", "gpt2", "--config", str(tmp_path / "u.json"))
    assert "no_such_family" in output and "neither ffn" in output and "nor transformers" in output
    assert len(output.strip().splitlines()) == 1


def test_a_model_only_building_counts_is_refused_in_a_comparison(runner: CliRunner, tmp_path: Path) -> None:
    # XLM's layout is not read (its layers are lists side by side): a count alone has no FLOPs to set beside gpt2's.
    from tests.tiny_families import tiny_config

    (tmp_path / "j.json").write_text(json.dumps(tiny_config("xlm")))
    result = runner.invoke(app, ["params", "--preset", "gpt2", "--config", str(tmp_path / "j.json")])
    assert result.exit_code == 1, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: ") and "names no decoder layer class" in line


@pytest.mark.parametrize(("lang", "one", "many"), [("en", "(layer 0)", "(layers 1–27)"), ("zh", "（第 0 层）", "（第 1–27 层）")])
def test_a_part_of_one_layer_says_layer(runner: CliRunner, lang: str, one: str, many: str) -> None:
    """deepseek-moe-16b's config keeps its first layer dense (first_k_dense_replace 1 of 28
    layers): the dense FFN row names one layer, the MoE row the other 27, each kept whole on
    its line at 80 columns."""
    config = json.loads((Path(__file__).parents[1] / "ffn_cli" / "presets" / "deepseek-moe-16b.json").read_text())
    dense = config["first_k_dense_replace"]
    assert (dense, config["num_hidden_layers"]) == (1, 28)
    result = runner.invoke(app, ["--lang", lang, "params", "--preset", "deepseek-moe-16b"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")
    assert any(line.rstrip().endswith(one) for line in lines), result.stdout
    assert any(many in line for line in lines), result.stdout
    assert "(layers 0)" not in result.stdout


def test_a_preset_no_reader_knows_stands_beside_a_read_one(runner: CliRunner) -> None:
    # glm-5's model_type (glm_moe_dsa) has no reader: laid out from its built layers, it is
    # compared with gpt2 (a reader's), its total held to transformers' whole model built on meta.
    import torch
    import transformers

    from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES
    from ffn_cli.configs.files import load_preset

    config = {k: v for k, v in load_preset("glm-5").items() if not k.startswith("_")}
    assert config["model_type"] not in SUPPORTED_MODEL_TYPES
    result = runner.invoke(app, ["params", "--preset", "gpt2,glm-5", "--json"])
    assert result.exit_code == 0, result.output
    totals = {row["name"]: row["total_params"] for row in json.loads(result.stdout)["models"]}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    assert totals["glm-5"] == sum(p.numel() for p in model.parameters())
    assert totals["gpt2"] == 124_439_808  # OpenAI's GPT-2 small, its head tied
