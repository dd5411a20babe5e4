"""Active parameters as vendors state them: with and without the token embeddings (and the
head), and a range where zero-computation experts take some of a token's picks (LongCat-Flash).
Each expected value is a hand count from the config, or transformers' own meta build."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES, model_spec_from_config
from ffn_cli.configs.files import load_preset
from ffn_cli.configs.source import preset_model
from ffn_cli.models.count import count_model


def _params_json(*args: str) -> Any:
    result = CliRunner().invoke(app, ["params", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_gpt_oss_120b_active_in_both_conventions_by_hand() -> None:
    # 201,088 × 2,880 token embeddings, and as many in the untied head; OpenAI's "5.1B active"
    # leaves the embeddings out and keeps the head.
    m = count_model(preset_model("gpt-oss-120b"))
    embeddings = 201_088 * 2_880
    assert m.active_params == 5_711_982_912
    assert m.active_without_embeddings == 5_711_982_912 - embeddings == 5_132_849_472
    assert m.active_without_embeddings_or_head == 5_711_982_912 - 2 * embeddings
    data = _params_json("--preset", "gpt-oss-120b")
    assert data["active_params_without_embeddings"] == 5_132_849_472
    assert data["active_params_without_embeddings_or_head"] == 5_711_982_912 - 2 * embeddings


def test_nemotron_3_nano_active_as_nvidia_states_it() -> None:
    # NVIDIA: 3.2B active per forward pass without the embeddings (131,072 × 2,688), 3.6B with them.
    m = count_model(preset_model("nemotron-3-nano-30b-a3b"))
    assert round(m.active_without_embeddings / 1e9, 1) == 3.2
    assert round(m.active_params / 1e9, 1) == 3.6
    assert m.active_params - m.active_without_embeddings == 131_072 * 2_688


def test_a_dense_model_has_one_active_count() -> None:
    m = count_model(preset_model("llama-3.1-8b"))
    assert m.active_params == m.total_params
    assert m.active_without_embeddings == m.total_params - 128_256 * 4_096


def test_a_vision_tower_is_in_the_total_never_in_the_active_count() -> None:
    """A text token never runs the tower: Llama 4 Scout's active count is its text model's
    (the preset's text_config read alone), its total that plus the tower; Meta states 17B active."""
    scout = count_model(preset_model("llama-4-scout"))
    text = load_preset("llama-4-scout")["text_config"]
    alone = count_model(model_spec_from_config({**text, "model_type": "llama4_text"}, name="scout-text"))
    assert scout.vision_params > 0 and scout.total_params == alone.total_params + scout.vision_params
    assert scout.active_params == alone.active_params and round(scout.active_params / 1e9) == 17
    assert scout.active_without_embeddings == alone.active_without_embeddings
    data = _params_json("--preset", "llama-4-scout")
    assert data["active_params"] == alone.active_params and data["vision_params"] == scout.vision_params


# --- zero-computation experts: a range -----------------------------------------------------

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path


def _tiny_longcat(zero: int, top_k: int) -> dict[str, Any]:
    from transformers import AutoConfig

    config = AutoConfig.for_model(
        "longcat_flash",
        hidden_size=64,
        num_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        ffn_hidden_size=96,
        q_lora_rank=32,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=8,
        v_head_dim=8,
        n_routed_experts=8,
        zero_expert_num=zero,
        moe_topk=top_k,
        expert_ffn_hidden_size=16,
        vocab_size=256,
    ).to_diff_dict()
    config["model_type"] = "longcat_flash"
    return config


def _built(config: dict[str, Any]) -> Any:
    from ffn_cli.configs.built_cache import count_cached

    return count_cached(config, name="tiny", source="test", known=SUPPORTED_MODEL_TYPES, use_cache=False)


def _transformers_total(config: dict[str, Any]) -> int:
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config))
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(("zero", "top_k", "least_real", "mean_real"), [(4, 3, 0, 2), (2, 3, 1, 2.4), (0, 3, 3, 3)])
def test_zero_computation_experts_make_the_active_count_a_range(zero: int, top_k: int, least_real: int, mean_real: float) -> None:
    # An expert: gate and up (2 × 16 × 64) and down (64 × 16); 8 of them in each of 2 layers.
    # A token picks top_k of the 8 + zero: the most it touches is top_k real experts, the least
    # top_k − zero of them (none when the zero experts can take every pick).
    config = _tiny_longcat(zero, top_k)
    m = _built(config)
    expert = 3 * 16 * 64
    routed = 2 * 8 * expert
    assert m.total_params == _transformers_total(config)
    assert m.active_params == m.total_params - routed + 2 * top_k * expert
    assert m.least_active_params == m.total_params - routed + 2 * least_real * expert
    # The mean with each of the 8 + zero experts picked equally often: top_k · 8 / (8 + zero) real
    # experts a layer, written out above (3 · 8 / 12 = 2, 3 · 8 / 10 = 2.4, 3 without zero experts).
    assert m.mean_active_params == round(m.total_params - routed + 2 * mean_real * expert)


def test_longcat_flash_chat_published_range(cache_home: Path) -> None:
    # LongCat-Flash's report: 560B total, 18.6B–31.3B active a token (27B on average, the trained
    # router's), stated without the 131,072 × 6,144 token embeddings. 28 layers of 512 experts of
    # 3 × 6,144 × 2,048; a token's 12 picks among them and 256 identity experts.
    data = _params_json("--preset", "longcat-flash-chat")
    total, least, most = data["total_params"], data["least_active_params"], data["active_params"]
    expert = 3 * 6_144 * 2_048
    assert total - least == 28 * 512 * expert
    assert most - least == 28 * 12 * expert
    embeddings = 131_072 * 6_144
    assert data["embedding_params"] == embeddings
    assert int(total / 1e9) == 560  # 560.66B
    assert int((least - embeddings) / 1e8) / 10 == 18.6  # the report truncates: 18.69B
    assert int((most - embeddings) / 1e8) / 10 == 31.3  # 31.38B
    # The mean from the config alone: each of the 512 + 256 experts picked equally often, 12 · 512 /
    # 768 = 8 real experts a layer: 27.15B without the embeddings, the report's "27B on average".
    mean = data["mean_active_params"]
    assert mean - least == 28 * 8 * expert and least < mean < most
    assert round((mean - embeddings) / 1e9) == 27
    text = " ".join(CliRunner().invoke(app, ["params", "--preset", "longcat-flash-chat"]).output.split())
    assert "active per token, least" in text and "active per token, mean" in text and "active per token, most" in text
    assert "zero-computation experts where they can (256 in the pool)" in text


def test_the_preset_is_transformers_default_config() -> None:
    from transformers import AutoConfig

    preset = {k: v for k, v in load_preset("longcat-flash-chat").items() if not k.startswith("_")}
    default = AutoConfig.for_model("longcat_flash").to_dict()
    assert all(default[k] == v for k, v in preset.items() if k not in ("architectures",))
