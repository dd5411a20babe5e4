"""Presets of 2026's flagships whose model_type no reader knows: each is transformers' own
config class defaults (the class docstring names the checkpoint it mirrors), counted by
building it. Each total is held against transformers' meta build and against the size its
vendor states (rounded, within one unit of the last digit stated, as tests/test_models.py
does for the readers' presets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.configs.files import load_preset

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

# preset → (model_type, total stated in B, active stated in B, the convention the active figure
# is held to: "all" with embeddings and head, "no embeddings or head", where it was stated)
STATED: dict[str, tuple[str, float, float, str, str]] = {
    "deepseek-v4-flash-base": ("deepseek_v4", 284, 13, "all", "DeepSeek-V4-Flash model card: 284B total, 13B activated"),
    "longcat-flash-chat": ("longcat_flash", 560, 31.3, "no embeddings", "LongCat-Flash report: 560B, 18.6B-31.3B active"),
}


# Presets that are a checkpoint's own config.json (the preset's `_source` names where it was
# copied from): total and active held to transformers' meta build and to the size the vendor or
# the name states, within `unit` billions. A multimodal model is built with its towers (Gemma 4's,
# Kimi K2.5's; Qwen3.5's, whose `architectures` names its image-text class).
REAL: dict[str, tuple[str, float, float, float, str, str]] = {
    "qwen3.5-27b": ("qwen3_5", 27, 1, 27, "all", "Qwen3.5-27B: 27B, dense"),
    "qwen3.5-35b-a3b": ("qwen3_5_moe", 35, 1, 3, "all", "Qwen3.5-35B-A3B model card: 35B total, 3B activated"),
    "qwen3.5-122b-a10b": ("qwen3_5_moe", 122, 1, 10, "all", "Qwen3.5-122B-A10B: 122B total, 10B activated"),
    "qwen3.5-397b-a17b": ("qwen3_5_moe", 397, 1, 17, "all", "Qwen3.5-397B-A17B: 397B total, 17B activated"),
    "gemma-4-26b-a4b": ("gemma4", 26, 1, 4, "all", "Gemma 4 26B A4B: 26B total, 4B active"),
    "gemma-4-31b-it-nvfp4": ("gemma4", 31, 1, 31, "all", "Gemma 4 31B: 31B, dense"),
    "kimi-k2.5": ("kimi_k25", 1000, 100, 32, "no embeddings", "Kimi K2.5: 1T total, 32B activated"),
    "deepseek-v4-pro": ("deepseek_v4", 1600, 100, 49, "all", "DeepSeek-V4-Pro: 1.6T total, 49B activated"),
    "deepseek-v4-flash": ("deepseek_v4", 284, 1, 13, "all", "DeepSeek-V4-Flash model card: 284B total, 13B activated"),
    "glm-5": ("glm_moe_dsa", 744, 1, 40, "no embeddings or head", "GLM-5 technical report: 744B total, 40B activated"),
    "mimo-v2-flash": ("mimo_v2_flash", 309, 1, 15, "all", "MiMo-V2-Flash README: 309B total, 15B active"),
    "glm-5.2": ("glm_moe_dsa", 744, 1, 40, "no embeddings or head", "GLM-5.2: the GLM-5 line's 744B total, 40B active"),
    "qwen3.6-27b-nvfp4": ("qwen3_5", 27, 1, 27, "all", "Qwen3.6-27B: 27B, dense"),
    "qwen3.6-35b-a3b-nvfp4": ("qwen3_5_moe", 35, 1, 3, "all", "Qwen3.6-35B-A3B: 35B total, 3B activated"),
    "minimax-m3": ("minimax_m3_vl", 428, 1, 23, "no embeddings or head", "MiniMax-M3 model card: ~428B parameters, ~23B activated"),
    "kimi-k2.6-nvfp4": ("kimi_k25", 1000, 100, 32, "no embeddings", "Kimi K2.6: 1T total, 32B activated"),
    "deepseek-v4-flash-nvfp4": ("deepseek_v4", 284, 1, 13, "all", "DeepSeek-V4-Flash model card: 284B total, 13B activated"),
}


@pytest.fixture(scope="module")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg")


def _params(name: str, cache_home: Path) -> Any:
    result = CliRunner().invoke(app, ["params", "--preset", name, "--json"], env={"XDG_CACHE_HOME": str(cache_home)})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _config(name: str) -> dict[str, Any]:
    """A preset as config.json holds it: its `_` keys (where it came from) dropped."""
    return {k: v for k, v in load_preset(name).items() if not k.startswith("_")}


def _transformers_total(config: dict[str, Any]) -> int:
    own = transformers.AutoConfig.for_model(**{k: v for k, v in config.items() if k != "auto_map"})  # not the repository's code
    named = getattr(transformers, (config.get("architectures") or [""])[0], None)  # the class the checkpoint says it is
    with torch.device("meta"):
        try:
            model = named(own) if named is not None else transformers.AutoModelForCausalLM.from_config(own)
        except ValueError:  # no causal-LM class: a model of images and text (Kimi K2.5's)
            model = transformers.AutoModelForImageTextToText.from_config(own)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", sorted(STATED))
def test_a_2026_preset_is_transformers_defaults_and_its_stated_size(name: str, cache_home: Path) -> None:
    model_type, total, active, convention, _source = STATED[name]
    preset = load_preset(name)
    config = {k: v for k, v in preset.items() if not k.startswith("_")}
    assert config["model_type"] == model_type and preset["_source"].startswith("transformers 5.25's")
    # The preset is the class's defaults: every key it holds is the default config's.
    default = transformers.AutoConfig.for_model(model_type).to_dict()
    built = transformers.AutoConfig.for_model(**config).to_dict()
    assert {k: v for k, v in built.items() if k != "architectures"} == {k: v for k, v in default.items() if k != "architectures"}
    data = _params(name, cache_home)
    assert data["total_params"] == _transformers_total(config)
    assert abs(data["total_params"] / 1e9 - total) < 1
    shown = data["active_params"]
    if convention == "no embeddings":
        shown = data["active_params_without_embeddings"]
    elif convention == "no embeddings or head":
        shown = data["active_params_without_embeddings_or_head"]
    assert abs(shown / 1e9 - active) < 1


def test_the_list_names_them_without_building(tmp_path: Path) -> None:
    # An empty cache: nothing laid out yet, so no counts; the list never builds.
    result = CliRunner().invoke(app, ["params", "--list-presets", "--json"], env={"XDG_CACHE_HOME": str(tmp_path)})
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    for name, (model_type, *_) in STATED.items():
        assert rows[name]["model_type"] == model_type and rows[name]["total_params"] is None
    assert set(rows["glm-5"]) == set(rows["llama-3.1-8b"])  # the same keys, unknown counts None


def test_the_list_counts_a_preset_once_it_is_laid_out(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    laid_out = _params("glm-5", tmp_path)
    result = CliRunner().invoke(app, ["params", "--list-presets", "--json"], env=env)
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["glm-5"]["total_params"] == laid_out["total_params"] == _transformers_total(_config("glm-5"))
    assert rows["glm-5"]["active_params"] == laid_out["active_params"]
    assert rows["deepseek-v4-flash"]["total_params"] is None  # not named yet


def test_each_layer_has_its_own_token_mixer_in_the_json(cache_home: Path) -> None:
    """Qwen3.5-35B-A3B: 30 Gated DeltaNet layers and 10 attention ones. Each per_layer row holds
    its own mixer's parameters, held to transformers' own layers built on meta (the mixer's
    norm counted with the norms, as the parts are); the attention's JSON names the output gate's
    half of q_proj beside its projections."""
    data = _params("qwen3.5-35b-a3b", cache_home)
    rows = {r["token_mixer"]: r for r in data["per_layer"]}
    assert sorted(rows) == ["Gated DeltaNet", "attention"]
    assert (len(rows["Gated DeltaNet"]["layers"]), len(rows["attention"]["layers"])) == (30, 10)
    assert sum(r["attention_params"] * len(r["layers"]) for r in data["per_layer"]) == data["attention_params"]
    config = _config("qwen3.5-35b-a3b")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    layers = model.model.layers
    linear, full = layers[rows["Gated DeltaNet"]["layers"][0]], layers[rows["attention"]["layers"][0]]
    assert rows["Gated DeltaNet"]["attention_params"] == sum(p.numel() for n, p in linear.linear_attn.named_parameters() if "norm" not in n)
    assert rows["attention"]["attention_params"] == sum(p.numel() for p in full.self_attn.parameters())
    attention = data["attention"]
    assert attention["layer_params"] == rows["attention"]["attention_params"]
    assert attention["extra_params"] == full.self_attn.q_proj.weight.numel() // 2  # the output gate's half


@pytest.mark.parametrize("name", sorted(REAL))
def test_a_checkpoints_own_config_and_its_stated_size(name: str, cache_home: Path) -> None:
    model_type, total, unit, active, convention, _stated = REAL[name]
    preset = load_preset(name)
    config = {k: v for k, v in preset.items() if not k.startswith("_")}
    assert config["model_type"] == model_type and preset["_source"].startswith("the checkpoint's config.json")
    data = _params(name, cache_home)
    assert data["total_params"] == _transformers_total(config)
    assert abs(data["total_params"] / 1e9 - total) < unit
    key = {"all": "active_params", "no embeddings": "active_params_without_embeddings"}.get(
        convention, "active_params_without_embeddings_or_head"
    )
    assert abs(data[key] / 1e9 - active) < 1


def test_the_docs_table_is_what_ffn_prints(cache_home: Path) -> None:
    # docs/params.md's table of these presets: each row's total, active count and checkpoint size
    # as `ffn params --json` gives them.
    text = (Path(__file__).parents[1] / "docs" / "params.md").read_text(encoding="utf-8")
    for name in REAL:
        (row,) = [line for line in text.splitlines() if line.startswith(f"| `{name}` |")]
        cells = [c.strip() for c in row.strip("|").split("|")]
        data = _params(name, cache_home)
        assert cells[2] == f"{data['total_params']:,}"
        assert cells[3] == ("dense" if data["moe_ffn"] is None else f"{data['active_params']:,}")
        stored = data.get("checkpoint")
        assert cells[5] == "bf16" if stored is None else cells[5].startswith(f"{stored['bytes'] / 2**30:.2f} GiB")


def test_a_tower_is_the_models_vision_part_or_said_to_be_left_out(cache_home: Path) -> None:
    # Kimi K2.5 is Kimi K2's language model (1,026,408,209,408 parameters as transformers builds it)
    # beside a vision tower and its projector: laid out (--gpu), those are its vision part, not
    # tensors beside the layers. Qwen3.5's checkpoint names its image-text class, built with its
    # tower whichever way it is counted; a file that names its causal-LM class, which builds the
    # text model alone, has its vision_config's tower named as not counted.
    result = CliRunner().invoke(
        app, ["params", "--preset", "kimi-k2.5", "--gpu", "h200", "--json"], env={"XDG_CACHE_HOME": str(cache_home)}
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    own = {k: v for k, v in load_preset("kimi-k2.5").items() if not k.startswith("_") and k != "auto_map"}
    with torch.device("meta"):
        built = transformers.AutoModelForImageTextToText.from_config(transformers.AutoConfig.for_model(**own))
    tower = sum(p.numel() for n, p in built.named_parameters() if n.startswith(("model.vision_tower.", "model.mm_projector.")))
    assert data["text_params"] == 1_026_408_209_408 and data["vision_params"] == tower
    assert {p["name"] for p in data["parts"] if p["kind"] == "vision"} == {"vision: model.vision_tower", "vision: model.mm_projector"}
    qwen = {k: v for k, v in load_preset("qwen3.5-27b").items() if not k.startswith("_")}
    assert qwen["architectures"] == ["Qwen3_5ForConditionalGeneration"]
    with torch.device("meta"):
        built = transformers.AutoModelForImageTextToText.from_config(transformers.AutoConfig.for_model(**qwen))
    visual = sum(p.numel() for n, p in built.named_parameters() if n.startswith("model.visual."))
    causal = cache_home / "qwen3.5-27b-causal.json"
    causal.write_text(json.dumps({**qwen, "architectures": ["Qwen3_5ForCausalLM"]}))
    for args in ([], ["--gpu", "h200"]):
        env = {"XDG_CACHE_HOME": str(cache_home)}
        data = json.loads(CliRunner().invoke(app, ["params", "--preset", "qwen3.5-27b", "--json", *args], env=env).stdout)
        assert data["vision_params"] == visual > 0 and data["total_params"] == sum(p.numel() for p in built.parameters())
        out = CliRunner().invoke(app, ["params", "--config", str(causal), *args], env={"XDG_CACHE_HOME": str(cache_home)})
        said = "its vision_config's tower is not counted: transformers' Qwen3_5ForCausalLM builds the text model alone"
        assert said in " ".join(out.output.split())


def test_a_tower_is_one_part_whichever_way_the_model_is_counted(cache_home: Path) -> None:
    # Gemma 4 26B-A4B's SigLIP tower and its projector: counted by building (no --gpu) they are the
    # part "vision tower", laid out (--gpu) the model's vision: rows, the same parameters, those
    # transformers' build holds under model.vision_tower and model.embed_vision.
    env = {"XDG_CACHE_HOME": str(cache_home)}
    built = json.loads(CliRunner().invoke(app, ["params", "--preset", "gemma-4-26b-a4b", "--json"], env=env).stdout)
    laid = json.loads(CliRunner().invoke(app, ["params", "--preset", "gemma-4-26b-a4b", "--gpu", "h200", "--json"], env=env).stdout)
    own = {k: v for k, v in load_preset("gemma-4-26b-a4b").items() if not k.startswith("_")}
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(transformers.AutoConfig.for_model(**own))
    tower = sum(p.numel() for n, p in model.named_parameters() if n.startswith(("model.vision_tower.", "model.embed_vision.")))
    assert built["vision_params"] == laid["vision_params"] == tower > 0
