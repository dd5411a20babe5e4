"""Presets of 2026's models made from the checkpoint's own config.json (never a config class's
defaults, which do not match the checkpoints they name), whose model_type no reader knows: the
count is held to transformers' whole model built on meta and to the size the vendor states, the
layout to hand counts of what decoding keeps."""

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

# preset → (model_type, total stated in B, active stated in B, the convention both are held to, where stated)
STATED: dict[str, tuple[str, float, float, str, str]] = {
    # MoonshotAI/Kimi-Linear README.md: "48B total, 3B activated"; 49.12B with the 163,840 × 2,304
    # embeddings and the untied head, 48.37B without them.
    "kimi-linear-48b-a3b": ("kimi_linear", 48, 3, "no embeddings or head", "MoonshotAI/Kimi-Linear README: 48B total, 3B activated"),
}


@pytest.fixture(scope="module")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg")


def _params(cache_home: Path, *args: str) -> Any:
    result = CliRunner().invoke(app, ["params", *args, "--json"], env={"XDG_CACHE_HOME": str(cache_home)})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _config(name: str) -> dict[str, Any]:
    return {k: v for k, v in load_preset(name).items() if not k.startswith("_")}


def _transformers_total(config: dict[str, Any]) -> int:
    data = dict(config)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(data.pop("model_type"), **data))
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", sorted(STATED))
def test_a_real_config_preset_counts_the_whole_build_and_its_stated_size(name: str, cache_home: Path) -> None:
    model_type, total, active, convention, _where = STATED[name]
    preset = load_preset(name)
    config = _config(name)
    assert config["model_type"] == model_type and "config.json" in preset["_source"]
    # Not the config class's defaults.
    default = transformers.AutoConfig.for_model(model_type).to_dict()
    assert any(default.get(k) != v for k, v in config.items() if k != "architectures")
    data = _params(cache_home, "--preset", name)
    assert data["total_params"] == _transformers_total(config)
    shown_total, shown_active = data["total_params"], data["active_params"]
    if convention == "no embeddings or head":  # the embeddings and the untied head left out of both
        shown_total, shown_active = data["non_embedding_params"], data["active_params_without_embeddings_or_head"]
        assert shown_total - data["total_params"] == shown_active - data["active_params"]
    assert abs(shown_total / 1e9 - total) < 1 and abs(shown_active / 1e9 - active) < 1


def test_kimi_linear_decode_state_by_hand(cache_home: Path) -> None:
    # 27 layers: MLA in layers 3, 7, …, 26 (linear_attn_config's full_attn_layers, 1-based), Kimi
    # Delta Attention in the 20 others. A KDA layer keeps 32 heads × 128 × 128 of state and its
    # q, k and v convolutions' 3 latest inputs of 32 × 128 channels each, whatever the context; an
    # MLA layer the 512-wide latent and the 64-wide rotary key of every token.
    data = _params(cache_home, "--preset", "kimi-linear-48b-a3b", "--gpu", "h200", "--phase", "decode", "--seq-len", "4096")
    kinds = {k["kind"]: k for k in data["decode_state"]["kinds"]}
    mla, kda = kinds["attention"], kinds["KimiLinearDeltaAttention"]
    assert (mla["layers"], mla["elements_per_token"], kda["layers"]) == (7, 512 + 64, 20)
    assert kda["elements_per_layer"] == 32 * 128 * 128 + 3 * 32 * 128 * 3
    assert data["per_gpu_memory"]["kv_cache_bytes"] == 2 * (7 * 4096 * (512 + 64) + 20 * (32 * 128 * 128 + 3 * 32 * 128 * 3))
