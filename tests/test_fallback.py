"""Counting what no reader knows by building it with transformers on meta.

Second paths: the same class built on the CPU and counted by storage (tied weights share
one); hand counts of the routed experts from the config; and, for every family ffn reads,
its reader, part by part.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")

import torch
import transformers
from rich.console import Console
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.configs import fallback, meta_build
from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES
from ffn_cli.configs.files import load_preset, preset_names
from ffn_cli.configs.source import preset_model
from ffn_cli.errors import FFNError
from ffn_cli.i18n import set_language, shown
from ffn_cli.models.count import count_model
from ffn_cli.render.built import built_data, built_view
from tests.helpers import read_preset_names
from tests.model_configs import CASES
from tests.tiny_families import DECODER_ONLY, FAMILIES, SMALL, tiny_config

# Families this transformers can build and no reader knows: the fallback's territory.
UNREAD = [t for t in FAMILIES if t not in SUPPORTED_MODEL_TYPES and meta_build.knows(t)]
# What the fallback builds for the families that are not decoder-only (the base model).
BASE_CLASSES = {
    "bart": "BartModel",
    "electra": "ElectraModel",
    "modernbert": "ModernBertModel",
    "nllb-moe": "NllbMoeModel",
    "mt5": "MT5Model",
    "roberta": "RobertaModel",
    "switch_transformers": "SwitchTransformersModel",
    "t5": "T5Model",
    "xlm": "XLMModel",
}


def _count(model_type: str, **overrides: Any) -> fallback.BuiltModel:
    if not meta_build.knows(model_type):
        pytest.skip(f"transformers {transformers.__version__} has no {model_type}")
    return meta_build.count({**tiny_config(model_type), **overrides}, name=model_type, source="test")


def _stored_params(model: torch.nn.Module) -> int:
    """Elements of every distinct parameter storage, walking each module's own parameters."""
    storages = {p.data_ptr(): p.numel() for m in model.modules() for p in m._parameters.values() if p is not None}
    return sum(storages.values())


def test_at_least_thirty_families_without_a_reader() -> None:
    assert len(UNREAD) >= 30, UNREAD


@pytest.mark.parametrize("model_type", UNREAD)
def test_total_is_exact_against_the_model_built_on_the_cpu(model_type: str, tmp_path: Path) -> None:
    m = _count(model_type)
    # transformers reads the same config.json from a local directory, as from_pretrained would.
    (tmp_path / "config.json").write_text(json.dumps(tiny_config(model_type)))
    hf_config = transformers.AutoConfig.from_pretrained(tmp_path)
    expected_class = BASE_CLASSES.get(model_type)
    assert m.model_class == expected_class if expected_class else m.model_class.endswith("ForCausalLM")
    torch.manual_seed(0)
    cpu_model = getattr(transformers, m.model_class)(hf_config)
    assert m.total_params == _stored_params(cpu_model)
    assert sum(p.params for p in m.parts) == m.total_params


@pytest.mark.parametrize("model_type", [t for t in UNREAD if t in DECODER_ONLY])
def test_decoder_only_transformers_leave_under_one_percent_other(model_type: str) -> None:
    m = _count(model_type)
    assert m.params_of("other") < 0.01 * m.total_params, m.part("other")
    for kind in ("embedding", "attention", "ffn"):
        assert m.params_of(kind) > 0, kind


def _experts(n_layers: int, per_expert: int, experts: int = 4, top_k: int = 2) -> tuple[int, int]:
    """(all routed-expert parameters, the share a token skips) over n_layers MoE layers."""
    return n_layers * experts * per_expert, n_layers * (experts - top_k) * per_expert


@pytest.mark.parametrize(
    ("model_type", "moe_layers", "per_expert"),
    [
        ("qwen3_moe", 2, 3 * 64 * 32),  # SwiGLU experts of width moe_intermediate_size
        ("olmoe", 2, 3 * 64 * 128),  # of width intermediate_size
        ("gpt_oss", 2, 64 * 256 + 256 + 128 * 64 + 64),  # fused gate_up and down, with biases
        ("dbrx", 2, 3 * 64 * 128),  # [E·d_ff, d] tensors in ffn_config
        ("deepseek_v3", 1, 3 * 64 * 32),  # first_k_dense_replace=1: layer 0 dense
        ("jamba", 1, 3 * 64 * 128),  # expert_layer_period=2, offset 1: layer 1 only
    ],
)
def test_active_parameters_of_routed_experts_by_hand(model_type: str, moe_layers: int, per_expert: int) -> None:
    m = _count(model_type)
    (routed,) = m.routed
    params, skipped = _experts(moe_layers, per_expert)
    assert (routed.experts, routed.top_k, routed.containers, routed.params) == (4, 2, moe_layers, params)
    assert m.active_params == m.total_params - skipped
    assert m.part("ffn").active_params == m.params_of("ffn") - skipped  # type: ignore[union-attr]


@pytest.mark.parametrize(("per_layer", "skipped_experts"), [([2, 2], 2 + 2), ([1, 3], 3 + 1)])
def test_experts_per_token_given_per_layer(per_layer: list[int], skipped_experts: int) -> None:
    # Hunyuan names k per layer (moe_topk: [8] * 32); the active count then sums layer by layer.
    m = _count_hunyuan(moe_topk=per_layer)
    (routed,) = m.routed
    per_expert = 3 * 64 * 32  # a SwiGLU expert of width intermediate_size
    assert routed.unknown_because is None
    assert m.active_params == m.total_params - skipped_experts * per_expert
    assert (routed.top_k, routed.layer_top_k) == ((2, ()) if per_layer == [2, 2] else (None, (1, 3)))


def test_a_present_top_k_key_is_never_called_missing() -> None:
    m = _count_hunyuan(moe_topk=[0, 2])  # present, but 0 experts per token is no routing
    (routed,) = m.routed
    assert m.active_params is None
    assert "no config key" not in (routed.unknown_because or "") and "moe_topk is [0, 2]" in (routed.unknown_because or "")


def _count_hunyuan(**keys: Any) -> fallback.BuiltModel:
    if not meta_build.knows("hunyuan_v1_moe"):
        pytest.skip(f"transformers {transformers.__version__} has no hunyuan_v1_moe")
    config = {**SMALL, "model_type": "hunyuan_v1_moe", "intermediate_size": 32, "num_experts": 4, **keys}
    return meta_build.count(config, name="hunyuan", source="test")


def test_a_mixture_of_attention_heads_counts_in_attention() -> None:
    m = _count("jetmoe")
    assert {r.kind for r in m.routed} == {"attention", "ffn"}
    assert m.active_params == sum(p.active_params for p in m.parts) < m.total_params


def test_active_is_unknown_when_no_key_names_the_experts_per_token() -> None:
    switch = _count("switch_transformers")  # top-1 by design, but no config key says so
    assert switch.active_params is None
    assert "num_experts_per_tok" in (switch.routed[0].unknown_because or "")
    data = built_data(switch)
    assert data["active_params"] is None and data["routed_experts"][0]["unknown_because"]
    dense = _count("stablelm")
    assert dense.routed == () and dense.active_params == dense.total_params


def test_jamba_matches_its_published_size() -> None:
    # The docs' example: AI21 gives Jamba-v0.1 as 52B parameters, 12B of them active.
    config = json.loads((Path(__file__).parents[1] / "docs/examples/jamba-v0.1/config.json").read_text())
    if not meta_build.knows(config["model_type"]):
        pytest.skip(f"transformers {transformers.__version__} has no jamba")
    m = meta_build.count(config, name="jamba", source="test")
    assert (round(m.total_params / 1e9), round((m.active_params or 0) / 1e9)) == (52, 12)


def test_a_vision_language_model_keeps_its_lm_head() -> None:
    config = transformers.AutoConfig.for_model("llava")  # defaults: CLIP ViT-L beside a LLaMA-7B
    m = meta_build.count(config.to_dict(), name="llava", source="test")
    text = config.get_text_config()
    assert m.model_class == "LlavaForConditionalGeneration"
    assert m.params_of("head") == text.vocab_size * text.hidden_size
    assert m.params_of("other") < 0.01 * m.total_params  # the projector's two Linears


def test_tied_weights_count_once_and_say_so() -> None:
    tied, untied = _count("cohere", tie_word_embeddings=True), _count("cohere", tie_word_embeddings=False)
    assert untied.total_params - tied.total_params == 64 * 256
    assert tied.params_of("head") == 0 and untied.params_of("head") == 64 * 256
    assert any("tied" in note and "counted once" in note for note in tied.notes)


# --- the readers are a second path --------------------------------------------------------


def _reader_kinds(name: str) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for p in count_model(preset_model(name)).parts:
        kinds[p.kind] = kinds.get(p.kind, 0) + p.params
    return {k: v for k, v in kinds.items() if v}


def _one_preset_per_family_fast() -> list[Any]:
    """Every preset; beyond the first of each model_type (another size of the same reader) in
    the slow run (`pytest -m slow`), which checks them all."""
    seen: set[str] = set()
    params = []
    for name in read_preset_names():
        model_type = load_preset(name)["model_type"]
        params.append(pytest.param(name, marks=pytest.mark.slow) if model_type in seen else name)
        seen.add(model_type)
    return params


@pytest.mark.parametrize("name", _one_preset_per_family_fast())
def test_fallback_agrees_with_the_reader_of_every_preset(name: str) -> None:
    config = load_preset(name)
    if not meta_build.knows(config["model_type"]) or config.get("auto_map"):
        pytest.skip(f"model_type {config['model_type']!r} is not in transformers {transformers.__version__}")
    built, read = meta_build.count(config, name=name, source=name), count_model(preset_model(name))
    if read.vision_params:
        # The reader keeps the vision tower apart; transformers builds it into the model (or,
        # for a causal-LM class, leaves it out): totals are compared, with or without it.
        assert built.total_params in (read.total_params, read.text_params)
        return
    assert built.total_params == read.total_params
    assert built.active_params == read.active_params
    assert {p.kind: p.params for p in built.parts if p.params} == _reader_kinds(name)


def test_every_family_with_a_reader_is_checked_against_transformers() -> None:
    covered = {load_preset(n)["model_type"] for n in preset_names() if meta_build.knows(load_preset(n)["model_type"])}
    covered |= {model_type for model_type, *_ in CASES}  # tests/test_models_transformers.py builds these
    # DeepSeek-MoE's model_type 'deepseek' is DeepSeek's own code, not a transformers class.
    assert set(SUPPORTED_MODEL_TYPES) - covered <= {"deepseek"}


# --- refusals and errors --------------------------------------------------------------------


def _write(tmp_path: Path, config: dict[str, Any]) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_remote_code_is_refused_with_one_line(tmp_path: Path, runner: CliRunner) -> None:
    config = {"model_type": "internlm2", "auto_map": {"AutoModelForCausalLM": "modeling_internlm2.InternLM2ForCausalLM"}, "hidden_size": 64}
    result = runner.invoke(app, ["params", "--config", _write(tmp_path, config)])
    assert result.exit_code == 2
    assert "this config needs trust_remote_code; ffn never runs a model's own code" in result.output
    assert "Traceback" not in result.output


def test_auto_map_beside_a_transformers_class_builds_that_class_not_the_repository_code(monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers.dynamic_module_utils as dynamic

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("remote code was asked for")

    monkeypatch.setattr(dynamic, "get_class_from_dynamic_module", never)
    config = {**tiny_config("cohere"), "auto_map": {"AutoModelForCausalLM": "modeling_cohere.CohereForCausalLM"}}
    m = meta_build.count(config, name="cohere", source="test")
    assert m.model_class == "CohereForCausalLM"
    assert any("auto_map ignored" in note for note in m.notes)


def test_a_repositorys_own_model_type_is_read_as_its_architectures_class(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kimi K2's config.json: model_type kimi_k2 (its repository's, with auto_map to its own code),
    # architectures DeepseekV3ForCausalLM, as vLLM and SGLang load it: laid out from transformers'
    # own DeepSeek-V3 class, every number equal to ffn's deepseek_v3 reader on the same keys.
    import transformers.dynamic_module_utils as dynamic

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("remote code was asked for")

    monkeypatch.setattr(dynamic, "get_class_from_dynamic_module", never)
    deepseek = tiny_config("deepseek_v3")
    auto_map = {"AutoConfig": "configuration_deepseek.DeepseekV3Config", "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"}
    kimi = {**deepseek, "model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"], "auto_map": auto_map}
    answers = []
    for config in (kimi, deepseek):
        args = ["params", "--config", _write(tmp_path, config), "--gpu", "h200", "--seq-len", "512", "--no-cache", "--json"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        answers.append(json.loads(result.stdout))
    read_as, reader = answers
    for key in ("total_params", "active_params", "matmul_flops_per_token"):
        assert read_as[key] == reader[key], key
    assert read_as["per_gpu_memory"]["kv_cache_bytes"] == reader["per_gpu_memory"]["kv_cache_bytes"]
    notes = read_as["layout"]["notes"]
    said = "model_type 'kimi_k2' is no transformers type: read as deepseek_v3, the type of DeepseekV3ForCausalLM"
    assert any(said in note for note in notes)


@pytest.mark.parametrize(
    "architectures",
    [["os"], ["AutoConfig"], ["__class__"], ["NoSuchForCausalLM"], ["LlamaForCausalLM", "MistralForCausalLM"], "LlamaForCausalLM"],
)
def test_remote_code_whose_architectures_name_no_one_transformers_model_is_refused(
    tmp_path: Path, runner: CliRunner, architectures: object
) -> None:
    config = {"model_type": "internlm2", "architectures": architectures, "auto_map": {"AutoModelForCausalLM": "m.X"}, "hidden_size": 64}
    result = runner.invoke(app, ["params", "--config", _write(tmp_path, config)])
    assert result.exit_code == 2
    assert "this config needs trust_remote_code; ffn never runs a model's own code" in result.output


def test_unknown_to_ffn_and_transformers(tmp_path: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["params", "--config", _write(tmp_path, {"model_type": "no_such_family", "hidden_size": 8})])
    assert result.exit_code == 2
    assert "neither ffn" in result.output and "nor transformers" in result.output and "llama" in result.output


def test_a_config_transformers_rejects_is_one_line(tmp_path: Path, runner: CliRunner) -> None:
    config = {**tiny_config("stablelm"), "num_attention_heads": 5}  # 64 does not split into 5 heads
    result = runner.invoke(app, ["params", "--config", _write(tmp_path, config)])
    assert result.exit_code == 2
    assert "transformers cannot" in result.output and "Traceback" not in result.output


def test_absurd_depth_is_refused_before_building() -> None:
    with pytest.raises(FFNError, match="num_hidden_layers=100000"):
        _count("stablelm", num_hidden_layers=100_000)


def test_without_transformers_the_error_names_the_families_and_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fallback, "transformers_available", lambda: False)
    with pytest.raises(FFNError) as caught:
        fallback.count_by_building({"model_type": "jamba"}, name="j", source="s", known=SUPPORTED_MODEL_TYPES)
    message = str(caught.value)
    assert all(t in message for t in SUPPORTED_MODEL_TYPES)
    assert "ffn-cli[transformers]" in message and "any architecture transformers knows" in message


def test_without_transformers_the_cli_fails_in_one_line_and_imports_no_torch(tmp_path: Path) -> None:
    path = _write(tmp_path, {"model_type": "jamba", "hidden_size": 64})
    code = (
        "import sys\n"
        "sys.modules['transformers'] = None  # as if it were not installed\n"
        "from typer.testing import CliRunner\n"
        "from ffn_cli.cli import app\n"
        f"result = CliRunner().invoke(app, ['params', '--config', {path!r}])\n"
        "assert result.exit_code == 2, result.output\n"
        "assert 'ffn-cli[transformers]' in result.output, result.output\n"
        "assert result.output.count('error:') == 1 and 'Traceback' not in result.output\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_nothing_is_downloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", offline)
    monkeypatch.setattr(socket, "create_connection", offline)
    for model_type in ("jamba", "t5", "olmoe"):
        assert _count(model_type).total_params > 0


# --- the CLI and the rendering ------------------------------------------------------------


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d[\d,]*", text))


@pytest.mark.parametrize("model_type", ["olmoe", "jamba", "switch_transformers"])
def test_table_at_80_columns_shows_every_number_whole(model_type: str) -> None:
    m = _count(model_type)
    console = Console(width=80, file=__import__("io").StringIO(), color_system=None)
    console.print(built_view(m))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Counted by building" in text and m.model_class in text and "meta device" in text
    shown = _numbers(text)
    for part in m.parts:
        assert f"{part.params:,}" in shown, part
        if part.inactive_params:
            assert f"{part.active_params:,}" in shown, part
    assert f"{m.total_params:,}" in shown
    if m.active_params is not None:
        assert f"{m.active_params:,}" in shown
    else:
        assert "unknown" in text
    for _, rule in m.rules:
        assert rule.split(" ")[0] in text


def test_cli_table_and_json_carry_the_same_counts(tmp_path: Path, runner: CliRunner) -> None:
    # XLM's layers, lists side by side, are no layout ffn reads: the model is counted by building it, and says why.
    path = _write(tmp_path, tiny_config("xlm"))
    table = runner.invoke(app, ["params", "--config", path])
    assert table.exit_code == 0, table.output
    result = runner.invoke(app, ["params", "--config", path, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    m = _count("xlm")
    assert data["counted_by"] == "transformers" and data["device"] == "meta"
    assert data["model_class"] == "XLMModel" and data["model"] == "tiny-xlm"
    assert data["total_params"] == m.total_params == sum(p["params"] for p in data["parts"])
    assert data["active_params"] == m.active_params
    assert [r["kind"] for r in data["rule"]] == [k for k, _ in m.rules]
    assert data["weight_bytes"]["bfloat16"] == 2 * m.total_params
    for part in data["parts"]:
        assert f"{part['params']:,}" in table.output
    said = " ".join(table.output.split())
    assert "Counted by building XLMModel" in said
    assert "its layout is not read (" in said and "so no FLOPs or costs are given" in said
    assert any("its layout is not read" in n for n in data["notes"])


def test_a_model_no_reader_knows_gets_a_read_familys_answer(tmp_path: Path, runner: CliRunner) -> None:
    """OLMoE has no reader: `ffn params` lays it out from its built layers and answers as for a
    read family: its total and active counts held to the whole model built on meta, its FLOPs a
    token to FlopCounterMode on transformers' own model running one token."""
    from torch.utils.flop_counter import FlopCounterMode

    config = tiny_config("olmoe")
    result = runner.invoke(app, ["params", "--config", _write(tmp_path, config), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["layout"]["read_from"] == "transformers modules, one layer of each kind"
    m = _count("olmoe")
    assert data["total_params"] == m.total_params
    assert data["active_params"] == m.active_params
    hf = transformers.AutoConfig.for_model(**config)
    # every op a matmul FlopCounterMode counts: eager attention, and each chosen expert's own linears
    model = transformers.AutoModelForCausalLM.from_config(hf, attn_implementation="eager", experts_implementation="eager").eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(torch.tensor([[3]]))
    head_dim = hf.head_dim or hf.hidden_size // hf.num_attention_heads
    # One token reads one key: Q·Kᵀ and softmax·V, 2 · heads · head_dim each a layer, which
    # the FLOPs a token leave out (they grow with the context).
    scores = hf.num_hidden_layers * 2 * 2 * hf.num_attention_heads * head_dim
    assert counter.get_total_flops() == data["matmul_flops_per_token"] + scores


def test_models_no_reader_knows_stand_beside_read_ones(tmp_path: Path, runner: CliRunner) -> None:
    path = _write(tmp_path, tiny_config("olmoe"))
    result = runner.invoke(app, ["params", "--config", path, "--preset", "llama-3.1-8b", "--json"])
    assert result.exit_code == 0, result.output
    totals = {row["name"]: row["total_params"] for row in json.loads(result.stdout)["models"]}
    assert totals["tiny-olmoe"] == _count("olmoe").total_params
    assert totals["llama-3.1-8b"] == 8_030_261_248  # Meta's published count


# --- the FFN module of one layer, for trace and bench -------------------------------------


def _built(model_type: str, **overrides: Any) -> torch.nn.Module:
    config = transformers.AutoConfig.for_model(model_type, **{**SMALL, **overrides}).to_dict()
    return meta_build.build_on_meta(config)[0]


@pytest.mark.parametrize(
    ("model_type", "overrides", "path", "cls"),
    [
        ("llama", {}, "model.layers.1.mlp", "LlamaMLP"),
        ("mixtral", {"num_local_experts": 4}, "model.layers.1.mlp", "MixtralSparseMoeBlock"),
        ("gpt2", {}, "transformer.h.1.mlp", "GPT2MLP"),
        (
            "jamba",
            {"num_experts": 4, "expert_layer_period": 2, "expert_layer_offset": 1},
            "model.layers.1.feed_forward",
            "JambaSparseMoeBlock",
        ),
        # an encoder-decoder's layers are its decoder's: self-attention, cross-attention, then the FFN
        ("t5", {"d_ff": 128, "d_kv": 16}, "decoder.block.1.layer.2", "T5LayerFF"),
    ],
)
def test_the_ffn_module_of_a_layer_is_found(model_type: str, overrides: dict[str, Any], path: str, cls: str) -> None:
    model = _built(model_type, **overrides)
    found = meta_build.find_ffn_module(model, 1)
    assert found is not None
    if found.path.endswith("block_sparse_moe"):  # transformers 4 named Mixtral's MoE block so
        path = path.replace(".mlp", ".block_sparse_moe")
    assert (found.path, type(found.module).__name__, found.layer) == (path, cls, 1)
    assert found.module is model.get_submodule(path)


def test_the_found_ffn_runs_under_the_trace_recorder_on_meta() -> None:
    from ffn_cli.tracing.recorder import record

    found = meta_build.find_ffn_module(_built("llama"), 0)
    assert found is not None
    out, rec = record(found.module, torch.empty(2, 3, 64, device="meta"))
    assert tuple(out.shape) == (2, 3, 64)
    by_module = {op.record.path for op in rec.ops if op.record.matmul_flops}
    assert by_module == {"gate_proj", "up_proj", "down_proj"}
    # Three (6 × 64)·(64 × 128)-sized matmuls: 2·m·n·k each, as FlopCounterMode counts.
    assert sum(op.record.matmul_flops for op in rec.ops) == 3 * 2 * 6 * 64 * 128


def test_no_single_ffn_module_is_said_plainly() -> None:
    # BERT splits its FFN into intermediate and the layer's output: no one module to trace.
    assert meta_build.find_ffn_module(_built("bert"), 0) is None
    assert meta_build.find_ffn_module(_built("mamba"), 0) is None


def test_a_layer_out_of_range_is_refused() -> None:
    with pytest.raises(FFNError, match="layers 0 to 1"):
        meta_build.find_ffn_module(_built("llama"), 2)


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"model_type": "t5", "num_layers": 2, "num_decoder_layers": 100_000}, "num_decoder_layers"),
        (
            {"model_type": "llava", "vision_config": {"model_type": "clip_vision_model", "num_hidden_layers": 100_000}},
            "vision_config.num_hidden_layers",
        ),
        ({"model_type": "switch_transformers", "num_experts": 100_000}, "num_experts"),
        ({"model_type": "switch_transformers", "num_experts": 4096, "num_layers": 4096, "num_sparse_encoder_layers": 4096}, "config"),
    ],
    ids=["t5-decoder", "llava-vision", "switch-experts", "experts-times-layers"],
)
def test_every_count_a_built_model_has_is_bounded_before_building(
    runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict, named: str
) -> None:
    """Not only the text config's num_hidden_layers: a decoder stack, a vision tower, the experts,
    and experts summed over layers are refused in one line, before a module is built."""
    built: list[str] = []

    def no_build(model_type: str, hf_config: object) -> object:  # the class a build would instantiate
        built.append(model_type)
        raise AssertionError(f"a {model_type} model was built")

    monkeypatch.setattr(meta_build, "auto_class", no_build)
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = runner.invoke(app, ["params", "--config", str(tmp_path)])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: --config {tmp_path}") or line.startswith(f"error: {named}") or named in line, line
    assert "at most" in line
    assert built == []  # checked by what ran, not by the clock: a 100,000-layer build takes minutes


def test_why_active_is_unknown_is_said_in_chinese() -> None:
    # 10 parameters in 2 containers: 5 each, which 4 experts do not split.
    routed = fallback.RoutedExperts(
        kind="ffn", modules=("m",), containers=2, params=10, experts=4, top_k=None, top_k_key="moe_topk", layer_top_k=(1, 3)
    )
    assert routed.active_params is None
    because = routed.unknown_because
    assert because == "10 parameters do not split into 4 equal experts with top-1–3 by layer"
    set_language("zh")
    assert shown(because) == "10 个参数不能均分为 4 个专家（top-1–3，逐层不同）"
    no_experts = fallback.RoutedExperts(kind="ffn", modules=("m",), containers=2, params=10, experts=None, top_k=2, top_k_key="k")
    assert shown(no_experts.unknown_because or "") == "无法从构建出的模块读出每个容器的专家数"


def test_a_shape_key_a_wrapper_reads_from_text_config_is_refused_at_the_top(tmp_path: Path, runner: CliRunner) -> None:
    # A flat copy of Step-3.7-Flash's config: vocab_size at the top level, where transformers'
    # step3p7 reads its text model's from text_config, which would take its default (128,815).
    default = transformers.AutoConfig.for_model("step3p7").get_text_config().vocab_size
    flat = {"model_type": "step3p7", "vocab_size": default + 81}
    result = runner.invoke(app, ["params", "--config", _write(tmp_path, flat)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    said = f"key vocab_size = {default + 81}: step3p7 reads these of its text model from text_config, not the top level: "
    assert said + f"vocab_size = {default + 81} ({default:,} in text_config); set them there" in result.output
