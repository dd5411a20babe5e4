"""`ffn trace` and `ffn bench` on the families of 2025, built from the tool's own modules.

Each MoE family's layer, traced on the CPU from a small config, holds its parameters to the
reader and its matmul FLOPs to FlopCounterMode on transformers' own MoE block built from the
same config: with exact N·k dispatch both run the router, the k experts of every token and the
shared experts, whatever the routing, so the counts agree exactly. Full-size presets trace
on meta, and Kimi K2's block traces its latent attention.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.configs.families import model_spec_from_config
from ffn_cli.configs.source import preset_model
from ffn_cli.models.count import count_model, ffn_params
from tests.model_configs import CASES, NEW_FAMILIES, small_config

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

MOE_FAMILIES = (
    "glm4_moe",
    "dots1",
    "ernie4_5_moe",
    "hunyuan_v1_moe",
    "minimax_m2",
    "qwen3_next",
    "lfm2_moe",
    "granitemoehybrid",
    "nemotron_h",
)
DENSE_FAMILIES = tuple(sorted(NEW_FAMILIES - set(MOE_FAMILIES)))
# The first small config of each family (tests/model_configs.py).
FIRST = {t: keys for t, keys in reversed(CASES) if t in NEW_FAMILIES}
MOE_PRESETS = (
    "qwen3-next-80b-a3b",
    "glm-4.5-air",
    "dots.llm1",
    "ernie-4.5-21b-a3b",
    "hunyuan-a13b",
    "minimax-m2",
    "qwen3-235b-a22b",
    "kimi-k2",
)


def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.output


def _write(tmp_path: Path, model_type: str) -> tuple[Path, dict[str, Any]]:
    config = small_config(model_type, FIRST[model_type])
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path, config


def _transformers_block_flops(config: dict[str, Any], layer: int, shape: list[int]) -> int:
    """FlopCounterMode on transformers' own FFN module of `layer`, its experts run eagerly
    (one matmul per expert over the tokens routed to it)."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config), experts_implementation="eager")
    decoder = model.model.layers[layer]
    if config["model_type"] == "nemotron_h":  # each layer's one block is its mixer, here its FFN
        blocks = [decoder.mixer]
    elif hasattr(decoder, "block_sparse_moe"):  # Granite-4.0-H runs its shared MLP beside the routed block, not in it
        blocks = [decoder.block_sparse_moe, decoder.shared_mlp]
    else:
        blocks = [decoder.feed_forward if hasattr(decoder, "feed_forward") else decoder.mlp]  # LFM2 calls it feed_forward
    x = torch.randn(*shape)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        for block in blocks:
            block(x)
    return int(counter.get_total_flops())


@pytest.mark.parametrize("model_type", MOE_FAMILIES)
def test_moe_layer_trace_against_the_reader_and_flop_counter(model_type: str, tmp_path: Path, one_thread: None) -> None:
    path, config = _write(tmp_path, model_type)
    data = _invoke("trace", "--config", str(path), "--json")
    spec = model_spec_from_config(config)
    assert spec.moe_ffn is not None and data["model"]["layer_kind"] == "MoE"
    layer = data["model"]["layer"]
    assert layer == spec.moe_layers[0]
    # The built module holds the FFNSpec's tensors; the model's extra ones (ERNIE's frozen
    # e_score_correction_bias) are named as not built.
    assert data["total_params"] == ffn_params(spec, spec.moe_ffn) - spec.moe_extra_params
    assert data["matmul_flops"] == _transformers_block_flops(config, layer, data["input_shape"])


@pytest.mark.parametrize("model_type", DENSE_FAMILIES)
def test_dense_layer_trace_against_the_reader_and_flop_counter(model_type: str, tmp_path: Path, one_thread: None) -> None:
    path, config = _write(tmp_path, model_type)
    data = _invoke("trace", "--config", str(path), "--json")
    spec = model_spec_from_config(config)
    assert spec.dense_ffn is not None and data["total_params"] == ffn_params(spec, spec.dense_ffn)
    assert data["matmul_flops"] == _transformers_block_flops(config, 0, data["input_shape"])


@pytest.mark.parametrize("model_type", MOE_FAMILIES)
def test_bench_times_each_new_moe_family(model_type: str, tmp_path: Path, one_thread: None) -> None:
    path, config = _write(tmp_path, model_type)
    args = ("bench", "--config", str(path), "--seq-len", "4", "--batch", "1", "--repeats", "2", "--warmup-ms", "0", "--json")
    (result,) = _invoke(*args)["results"]
    moe = model_spec_from_config(config).moe_ffn
    assert moe is not None and result["d_model"] == config["hidden_size"] and result["d_ff"] == moe.hidden


@pytest.mark.parametrize("name", MOE_PRESETS)
def test_full_size_moe_presets_trace_on_meta(name: str) -> None:
    data = _invoke("trace", "--preset", name, "--device", "meta", "--json")
    spec = preset_model(name)
    assert spec.moe_ffn is not None and data["model"]["layer"] == spec.moe_layers[0]
    assert data["total_params"] == ffn_params(spec, spec.moe_ffn) - spec.moe_extra_params
    assert data["spec"]["experts"] == spec.moe_ffn.experts and data["spec"]["top_k"] == spec.moe_ffn.top_k


def test_kimi_k2_block_traces_its_latent_attention() -> None:
    """MLA step by step: the q and kv low-rank projections and their norms, counted as `ffn
    params` counts the layer's attention."""
    data = _invoke("trace", "--preset", "kimi-k2", "--device", "meta", "--block", "--json")
    parts = {p.name: p.params_each for p in count_model(preset_model("kimi-k2")).parts}
    assert data["param_groups"]["attn"] == parts["attention"]
    assert data["block"]["attention"]["kind"] == "MLA" and data["block"]["n_heads"] == 64
    steps = [s["name"] for s in data["steps"]]
    for step in (
        "attn.q_a_proj",
        "attn.q_a_layernorm",
        "attn.q_b_proj",
        "attn.kv_a_proj_with_mqa",
        "attn.kv_a_layernorm",
        "attn.kv_b_proj",
    ):
        assert step in steps, step


def test_gemma3n_trace_says_the_activation_sparsity_is_not_run() -> None:
    """Gemma 3n's first layers cut the gate below a Gaussian quantile, which no variant runs:
    the layer traces as its plain gated FFN, at the same parameters and matmul FLOPs, and says so."""
    data = _invoke("trace", "--preset", "gemma-3n-e4b", "--device", "meta", "--json")
    spec = preset_model("gemma-3n-e4b")
    assert data["model"]["layer"] == 0 and spec.dense_ffn is not None
    assert data["total_params"] == ffn_params(spec, spec.dense_ffn) == 3 * 2048 * 16384
    assert any(note.startswith("activation sparsity 0.95") for note in data["model"]["not_built"])
    later = _invoke("trace", "--preset", "gemma-3n-e4b", "--device", "meta", "--layer", "10", "--json")
    assert not any("sparsity" in note for note in later["model"]["not_built"])


def test_gemma3n_block_of_a_kv_shared_layer_is_refused_in_one_line() -> None:
    result = CliRunner().invoke(app, ["trace", "--preset", "gemma-3n-e4b", "--device", "meta", "--block", "--layer", "20"])
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert "keys and values" in result.output and "Traceback" not in result.output


def test_gemma3n_block_traces_its_own_attention_and_names_what_it_leaves_out() -> None:
    data = _invoke("trace", "--preset", "gemma-3n-e4b", "--device", "meta", "--block", "--layer", "12", "--json")
    parts = {p.name: p.params_each for p in count_model(preset_model("gemma-3n-e4b")).parts}
    assert data["param_groups"]["attn"] == parts["attention"]
    assert {"AltUp", "Laurel", "per-layer input gate", "7 norms per layer (built with 2)"} <= set(data["model"]["not_built"])


def test_a_routed_layer_no_reader_knows_traces_on_meta_as_laid_out(tmp_path: Path, one_thread: None) -> None:
    # Qwen3.5-MoE (no reader): on meta, transformers' own MoE block has no values to route by, so the
    # layer is ffn's FFN of the shapes its layout reads, routed evenly, and says so. Its matmul FLOPs
    # are FlopCounterMode's over transformers' own block on the CPU: N·k pairs whatever the routing.
    keys = dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, shared_expert_intermediate_size=48,
                num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=8,
                num_experts_per_tok=2, vocab_size=128, layer_types=["linear_attention"] * 3 + ["full_attention"],
                linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8)  # fmt: skip
    config = {**transformers.AutoConfig.for_model("qwen3_5_moe_text", **keys).to_dict(), "model_type": "qwen3_5_moe_text"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    data = _invoke("trace", "--config", str(path), "--device", "meta", "--json")
    assert any("routes by values the meta device does not hold" in n for n in data["model"]["not_built"])
    assert data["spec"]["experts"] == 8 and data["spec"]["top_k"] == 2
    assert data["matmul_flops"] == _transformers_block_flops(config, data["model"]["layer"], data["input_shape"])
    # On the CPU it is transformers' own module, its routing real.
    cpu = _invoke("trace", "--config", str(path), "--json")
    assert cpu["module"]["source"] == "transformers" and cpu["module"]["class"] == "Qwen3_5MoeSparseMoeBlock"
    # Its router always rescales the top-k weights to sum to 1 (its config names no choice): the
    # stand-in renormalises too, and every FLOP, the elementwise ones included, is the module's.
    assert data["spec"]["normalize_top_k"] is True
    assert (cpu["matmul_flops"], cpu["total_flops"]) == (data["matmul_flops"], data["total_flops"])
