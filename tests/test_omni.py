"""Omni models (Qwen2.5-Omni, Qwen3-Omni): a thinker (a text model with vision and audio towers,
their configs nested in thinker_config) beside a talker (a decoder of its own that turns the
thinker's states into speech codes) and a vocoder. Laid out as the thinker's decoder; the towers
and the speech output held whole, never in a text token's active count; what the talker keeps as
the model speaks named as left out. Each figure is held to transformers' own model built on meta,
to the safetensors' published total, or to a hand count written out here."""

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

PRESET = "qwen3-omni-30b-a3b-instruct"
# The checkpoint's 15 safetensors files hold 35,259,818,545 parameters (the preset's _source).
PUBLISHED_TOTAL = 35_259_818_545


@pytest.fixture(scope="module")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg")


def _config(name: str) -> dict[str, Any]:
    return {k: v for k, v in load_preset(name).items() if not k.startswith("_")}


def _built(config: dict[str, Any]) -> Any:
    """The class the config's architectures names, built on meta by transformers."""
    hf = transformers.AutoConfig.for_model(**config)
    with torch.device("meta"):
        return getattr(transformers, config["architectures"][0])(hf)


def _sum(model: Any, *words: str) -> int:
    """The parameters whose name holds one of `words` as a module of its own."""
    return sum(p.numel() for n, p in model.named_parameters() if any(f"{w}." in f".{n}" for w in words))


def _params(args: list[str], cache_home: Path) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["params", *args, "--json"], env={"XDG_CACHE_HOME": str(cache_home)})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def qwen3_omni(cache_home: Path) -> tuple[dict[str, Any], Any]:
    decode = ["--phase", "decode", "--seq-len", "32768", "--batch", "8"]
    return _params(["--preset", PRESET, "--gpu", "h200", "--tp", "2", *decode], cache_home), _built(_config(PRESET))


def test_qwen3_omni_is_its_checkpoint_and_transformers_build(qwen3_omni: tuple[dict[str, Any], Any]) -> None:
    data, model = qwen3_omni
    assert data["total_params"] == PUBLISHED_TOTAL == sum(p.numel() for p in model.parameters())
    assert data["layout"] is not None
    # the thinker's 48 layers are the decoder; the talker's 20 and its code predictor's 5 are its speech output
    assert len([i for row in data["per_layer"] for i in row["layers"]]) == 48
    assert data["tower_params"] == {
        "audio": _sum(model, "audio_tower"),
        "images": _sum(model, "visual"),
        "speech": _sum(model, "talker", "code2wav"),
    }
    assert data["text_params"] == _sum(model, "thinker") - _sum(model, "audio_tower", "visual")


def test_qwen3_omni_active_count_is_the_thinkers_text_token(qwen3_omni: tuple[dict[str, Any], Any]) -> None:
    data, _model = qwen3_omni
    d, vocab, layers, experts, top_k, d_ff, kv_heads, heads, head_dim = 2048, 152_064, 48, 128, 8, 768, 4, 32, 128
    attention = d * heads * head_dim * 2 + d * kv_heads * head_dim * 2 + 2 * head_dim  # q, o; k, v; q and k norms
    layer = attention + experts * d + top_k * 3 * d * d_ff + 2 * d  # the router, 8 SwiGLU experts, two norms
    assert data["active_params"] == 2 * vocab * d + layers * layer + d  # untied head; the final norm
    # its name's A3B: about 3B a token, never the towers' or the talker's 4.7B
    assert 3.0e9 < data["active_params"] < 3.5e9


def test_qwen3_omni_deployment_answer_names_the_talkers_cache(qwen3_omni: tuple[dict[str, Any], Any]) -> None:
    data, _model = qwen3_omni
    memory = data["per_gpu_memory"]
    # the thinker's KV cache on one GPU of --tp 2: 8 sequences × 32,768 tokens × 48 layers × K and V × 2 of
    # its 4 KV heads × 128 × 2 bytes
    assert memory["kv_cache_bytes"] == 8 * 32_768 * 48 * 2 * 2 * 128 * 2
    # the thinker's own limit (thinker_config.text_config's max_position_embeddings), not its talker's
    limit = _config(PRESET)["thinker_config"]["text_config"]["max_position_embeddings"]
    assert memory["context_limit"] == limit == 65_536 and memory["max_context"] == limit
    (speech,) = [w for w in memory["left_out"] if "speech output" in w]
    assert "talker" in speech and "code2wav" in speech and "not counted" in speech
    assert any("talker" in w for w in data["roofline"]["left_out"])
    # what a server that returns text alone would not hold, and how to size it
    (held,) = [n for n in data["layout"]["notes"] if n.startswith("the speech output (")]
    assert f"({data['tower_params']['speech']:,} parameters)" in held and "enable_audio_output: false" in held


def test_qwen3_omni_holds_its_towers_and_speech_output_whole_on_every_gpu(cache_home: Path) -> None:
    result = CliRunner().invoke(
        app, ["params", "--preset", PRESET, "--gpu", "h200", "--tp", "2"], env={"XDG_CACHE_HOME": str(cache_home), "COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    assert "replicated: norms, routers, towers and speech output" in result.stdout
    assert "speech: talker" in result.stdout and "speech: code2wav" in result.stdout
    stored = CliRunner().invoke(
        app, ["params", "--preset", PRESET, "--weights", "fp8"], env={"XDG_CACHE_HOME": str(cache_home), "COLUMNS": "100"}
    )
    rows = [line.split() for line in stored.stdout.splitlines() if line.startswith("towers and speech output")]
    assert ["4,727,171,633", "bf16", "16", "8.81", "GiB"] in [r[4:] for r in rows]  # the stored table's: kept in the rest's format


def test_qwen2_5_omni_lays_out_its_thinker_not_its_talker(tmp_path: Path, cache_home: Path) -> None:
    """transformers' default Qwen2.5-Omni: its talker is a list of 28 layers of the thinker's own
    class; the thinker's are the decoder, the talker's its speech output."""
    hf = transformers.AutoConfig.for_model("qwen2_5_omni")
    hf.save_pretrained(tmp_path)
    data = _params(["--config", str(tmp_path), "--gpu", "h200"], cache_home)
    with torch.device("meta"):
        model = transformers.Qwen2_5OmniForConditionalGeneration(hf)
    assert data["total_params"] == sum(p.numel() for p in model.parameters())
    assert len([i for row in data["per_layer"] for i in row["layers"]]) == len(model.thinker.model.language_model.layers) == 28
    assert data["tower_params"]["speech"] == _sum(model, "talker", "token2wav")
    assert data["active_params"] == _sum(model, "thinker") - _sum(model, "audio_tower", "visual")  # dense: every text parameter
    assert data["per_gpu_memory"]["context_limit"] == hf.thinker_config.text_config.max_position_embeddings


def test_without_audio_output_the_talker_is_said_not_counted(tmp_path: Path, cache_home: Path) -> None:
    config = _config(PRESET) | {"enable_audio_output": False}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    data = _params(["--config", str(tmp_path), "--gpu", "h200"], cache_home)
    model = _built(config)
    assert not hasattr(model, "talker")  # transformers builds no speech output
    assert data["total_params"] == sum(p.numel() for p in model.parameters())
    assert "speech" not in data["tower_params"]
    notes = " ".join(data["layout"]["notes"])
    assert "talker_config is not counted" in notes and "code2wav_config is not counted" in notes
    assert not any("speech output" in w for w in data["per_gpu_memory"].get("left_out", []))
    # The memory's header says the checkpoint it sizes is the model as built, without the talker its files hold.
    assert sorted(data["per_gpu_memory"]["not_built"]) == ["code2wav_config", "talker_config"]
    shown = CliRunner().invoke(app, ["params", "--config", str(tmp_path), "--gpu", "h200"],
                               env={"XDG_CACHE_HOME": str(cache_home), "COLUMNS": "200"})  # fmt: skip
    assert "without its code2wav_config, talker_config: not built)" in shown.stdout
    assert _params(["--preset", PRESET, "--gpu", "h200"], cache_home)["per_gpu_memory"]["not_built"] == []


def test_a_speech_models_diffusion_head_is_its_speech_output(tmp_path: Path, cache_home: Path) -> None:
    """transformers' default VibeVoice: a text model whose speech comes from a diffusion head drawing
    each latent, its acoustic tokenizer's decoder turning the latents into the waveform, and a
    semantic tokenizer reading it back (its diffusion_head_config and semantic_model_config); the
    acoustic tokenizer's encoder (its audio_config) reads the voice given. Two scalars beside the
    layers, stored as scalars. No talker: no decode state of its own is named."""
    hf = transformers.AutoConfig.for_model("vibevoice")
    hf.save_pretrained(tmp_path)
    data = _params(["--config", str(tmp_path), "--gpu", "h200", "--weights", "fp8"], cache_home)
    with torch.device("meta"):
        model = transformers.VibeVoiceForConditionalGeneration(hf)
    assert data["total_params"] == sum(p.numel() for p in model.parameters())
    spoken = ("diffusion_head", "semantic_tokenizer_encoder", "semantic_connector", "audio_tower.decoder")
    assert data["tower_params"]["speech"] == _sum(model, *spoken)
    assert data["tower_params"]["audio"] == _sum(model, "audio_tower.encoder", "multi_modal_projector")
    halves = _sum(model, "audio_tower.encoder", "audio_tower.decoder")
    assert _sum(model, "audio_tower.decoder") > 0 and _sum(model, "audio_tower") == halves
    assert any("diffusion_head" in w for w in data["roofline"]["left_out"])
    assert not any("speech output" in w for w in data["per_gpu_memory"].get("left_out", []))
    shown = CliRunner().invoke(app, ["params", "--config", str(tmp_path)], env={"XDG_CACHE_HOME": str(cache_home), "COLUMNS": "250"})
    assert "not in the active counts: they run on the model's audio and the speech it speaks" in shown.stdout  # no images


def test_side_by_side_the_footnote_names_the_towers_and_speech_output(cache_home: Path) -> None:
    result = CliRunner().invoke(
        app, ["params", "--preset", f"{PRESET},gemma-3-4b"], env={"XDG_CACHE_HOME": str(cache_home), "COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert f"* {PRESET}: the total includes its towers and speech output, 4.73 G; its active count does not" in result.stdout
    assert "* gemma-3-4b: the total includes its vision tower" in result.stdout
