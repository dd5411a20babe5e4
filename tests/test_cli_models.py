"""`ffn trace` and `ffn bench` on one layer of a real model: --preset, --config, --layer, the
block, overrides and refusals. Each traced module is held to the model accounting, which
tests/test_models_transformers.py holds to the modules transformers builds."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli import device
from ffn_cli.cli import app
from ffn_cli.configs.source import load_model, preset_model
from ffn_cli.models.count import count_model, ffn_params
from tests.helpers import read_preset_names
from tests.model_configs import CASES, small_config

# A representative few for the default run: dense, MoE with shared experts and dense-first
# layers, MLA, sinks and a router bias, multimodal, an encoder, interleaved MoE.
QUICK = (
    "llama-3-8b",
    "mixtral-8x7b",
    "deepseek-v3",
    "gpt-oss-20b",
    "qwen1.5-moe-a2.7b",
    "gemma-3-4b",
    "bert-base-uncased",
    "llama-4-scout",
)
SLOW = tuple(p for p in read_preset_names() if p not in QUICK)


def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.output


def _fails(*args: str, code: int = 2) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and result.output.count("\n") == 1, result.output
    return result.output


def _check_preset_on_meta(name: str) -> None:
    data = _invoke("trace", "--preset", name, "--device", "meta", "--json")
    spec = preset_model(name)
    layer = data["model"]["layer"]
    # The first MoE layer, else the first with an FFN (Nemotron-H's layer 0 is a Mamba-2 block).
    assert layer == (spec.moe_layers[0] if spec.moe_layers else min(set(range(spec.n_layers)) - set(spec.no_ffn_layers)))
    assert data["model"]["layer_kind"] == ("MoE" if spec.moe_layers else "dense")
    ffn = spec.moe_ffn if spec.moe_layers else spec.dense_ffn
    assert ffn is not None
    # The built module's parameters = the model's per-layer FFN less the tensors the FFNSpec does
    # not hold (a router bias), which the header names as not built.
    extra = spec.moe_extra_params if ffn.is_moe else 0
    assert data["total_params"] == ffn_params(spec, ffn) - extra
    assert len(data["model"]["not_built"]) >= (len(spec.moe_extra) if ffn.is_moe else 0)
    assert data["spec"]["d_model"] == spec.d_model and data["spec"]["d_ff"] == ffn.hidden


@pytest.mark.parametrize("name", QUICK)
def test_presets_trace_on_meta(name: str) -> None:
    _check_preset_on_meta(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_every_preset_traces_on_meta(name: str) -> None:
    _check_preset_on_meta(name)


def test_layer_choice_and_kind() -> None:
    # DeepSeek-V3's first three layers are dense (first_k_dense_replace 3).
    assert _invoke("trace", "--preset", "deepseek-v3", "--device", "meta", "--json")["model"]["layer"] == 3
    dense = _invoke("trace", "--preset", "deepseek-v3", "--device", "meta", "--layer", "0", "--json")
    assert dense["model"]["layer_kind"] == "dense" and dense["spec"]["variant"] == "swiglu" and dense["spec"]["d_ff"] == 18432
    out = _invoke("trace", "--preset", "deepseek-v3", "--device", "meta", "--layer", "0")
    assert "deepseek-v3 · layer 0 of 61 (dense)" in out
    assert "layers 0 to 60" in _fails("trace", "--preset", "deepseek-v3", "--device", "meta", "--layer", "61")


def test_block_has_the_models_heads() -> None:
    data = _invoke("trace", "--preset", "llama-3-8b", "--device", "meta", "--block", "--json")
    attention = {"kind": "GQA", "qk_norm": "none", "sinks": False}
    assert data["block"] == {"n_heads": 32, "n_kv_heads": 8, "head_dim": 128, "norm": "rmsnorm", "pre_norm": True, "attention": attention}
    parts = {p.name: p.params_each for p in count_model(preset_model("llama-3-8b")).parts}
    assert data["param_groups"]["attn"] == parts["attention"]
    assert data["param_groups"]["norm1"] + data["param_groups"]["norm2"] == parts["layer norms"]
    assert any("causal mask" in note for note in data["model"]["not_built"])
    # BERT is post-norm with LayerNorm and biases.
    bert = _invoke("trace", "--preset", "bert-base-uncased", "--device", "meta", "--block", "--json")
    assert bert["block"]["pre_norm"] is False and bert["block"]["norm"] == "layernorm"
    bert_parts = {p.name: p.params_each for p in count_model(preset_model("bert-base-uncased")).parts}
    assert bert["param_groups"]["attn"] == bert_parts["attention"]


def test_block_builds_latent_attention() -> None:
    """DeepSeek-V3's MLA in its block, counted as `ffn params` counts the layer's attention;
    --n-heads resizes it, --n-kv-heads is refused (one latent serves every head)."""
    data = _invoke("trace", "--preset", "deepseek-v3", "--device", "meta", "--block", "--json")
    parts = {p.name: p.params_each for p in count_model(preset_model("deepseek-v3")).parts}
    assert data["param_groups"]["attn"] == parts["attention"]
    assert data["block"]["attention"]["kind"] == "MLA" and data["block"]["n_heads"] == 128
    fewer = _invoke("trace", "--preset", "deepseek-v3", "--device", "meta", "--block", "--n-heads", "16", "--json")
    assert fewer["block"]["n_heads"] == 16 and fewer["model"]["overrides"] == ["--n-heads 16"]
    assert "drop --n-kv-heads" in _fails("trace", "--preset", "deepseek-v3", "--device", "meta", "--block", "--n-kv-heads", "8")


def test_options_override_and_are_listed() -> None:
    data = _invoke(
        "trace", "--preset", "mixtral-8x7b", "--device", "meta", "--d-ff", "1024", "--top-k", "1", "--dtype", "float32", "--json"
    )
    assert data["spec"]["d_ff"] == 1024 and data["spec"]["top_k"] == 1 and data["spec"]["experts"] == 8
    assert data["dtype"] == "float32"
    assert data["model"]["overrides"] == ["--d-ff 1024", "--top-k 1", "--dtype float32"]
    out = _invoke("trace", "--preset", "mixtral-8x7b", "--device", "meta", "--d-ff", "1024")
    assert "overridden: --d-ff 1024" in out
    # The config's dtype is the default.
    assert _invoke("trace", "--preset", "mixtral-8x7b", "--device", "meta", "--json")["dtype"] == "bfloat16"
    # The width is named as typed (trace named it without one: the API's own d_model field, unset).
    assert "--d-model 1024,2048: mixtral-8x7b fixes d_model" in _fails("trace", "--preset", "mixtral-8x7b", "--d-model", "1024,2048")
    # A list of variants reaches the layer as typed, refused as no variant (a layer is one FFN).
    assert "--variant relu,swiglu: no such variant" in _fails("trace", "--preset", "mixtral-8x7b", "-v", "relu,swiglu")
    renamed = _invoke("trace", "--preset", "mixtral-8x7b", "--device", "meta", "-v", "GeGLU", "--json")
    assert renamed["model"]["overrides"] == ["--variant GeGLU"] and renamed["spec"]["variant"] == "geglu"  # listed as typed


@pytest.mark.parametrize(
    "args",
    [
        ["trace", "--layer", "1"],
        ["trace", "--revision", "main"],
        ["trace", "--preset", "gpt2", "--model", "openai-community/gpt2"],
        ["trace", "--preset", "no-such-model"],
        ["bench", "--preset", "gpt2", "--d-model", "64"],
    ],
)
def test_bad_model_options(args: list[str]) -> None:
    _fails(*args)


def test_preflight_refuses_with_the_meta_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device, "available_memory_bytes", lambda _device: 1 << 30)
    out = _fails("trace", "--preset", "llama-3.1-405b", code=1)
    assert "use --device meta" in out
    # The rule the refusal applies, said: the estimate is weighed against 85 % of what is free.
    assert ", more than 85 % of the 1.00 GiB free on cpu;" in out
    zh = _fails("--lang", "zh", "trace", "--preset", "llama-3.1-405b", code=1)
    assert "超过 cpu 可用的 1.00 GiB 的 85%" in zh


def test_trace_config_file(tmp_path: Any) -> None:
    from ffn_cli.configs.files import load_preset

    (tmp_path / "config.json").write_text(json.dumps(load_preset("qwen2-0.5b")), encoding="utf-8")
    data = _invoke("trace", "--config", str(tmp_path), "--device", "meta", "--json")
    assert data["spec"]["d_ff"] == 4864 and data["model"]["source"] == f"config {tmp_path}"


def test_bench_times_the_models_layer(one_thread: None) -> None:
    data = _invoke(
        "bench",
        "--preset",
        "qwen2-0.5b",
        "--seq-len",
        "4",
        "--batch",
        "1",
        "--repeats",
        "2",
        "--warmup-ms",
        "0",
        "--d-ff",
        "64",
        "--fused",
        "--json",
    )
    assert data["model"]["name"] == "qwen2-0.5b" and data["model"]["overrides"] == ["--d-ff 64"]  # --fused is bench's, not the spec's
    (result,) = data["results"]
    assert result["d_model"] == 896 and result["d_ff"] == 64


@pytest.mark.parametrize(("model_type", "keys"), CASES, ids=[f"{t}-{i}" for i, (t, _k) in enumerate(CASES)])
def test_every_family_traces_and_checks(model_type: str, keys: dict[str, Any], tmp_path: Any, one_thread: None) -> None:
    """Each family's small config: its default layer on CPU, checked against the NumPy
    reference; and in its block on meta, or refused in one line where the block cannot build it."""
    config = small_config(model_type, keys)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    data = _invoke("trace", "--config", str(path), "--check", "--dtype", "float64", "--json")
    assert data["check_passed"] is True
    spec = load_model(config=str(path)).spec
    if spec.attention_extra:  # a gated attention: not built
        assert "drop --block" in _fails("trace", "--config", str(path), "--block", "--device", "meta")
        return
    if spec.mixer is not None:  # a hybrid: its attention layers build, its other mixers are refused
        done = CliRunner().invoke(app, ["trace", "--config", str(path), "--block", "--device", "meta", "--json"])
        if done.exit_code != 0:
            # One line on stderr; --json also puts the error on stdout, as JSON.
            assert "drop --block" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.output
            assert json.loads(done.stdout)["error"]["option"] == "--block", done.stdout
            return
        assert json.loads(done.stdout)["param_groups"]["attn"] == spec.attention.params
        return
    block = _invoke("trace", "--config", str(path), "--block", "--device", "meta", "--json")
    assert block["param_groups"]["attn"] == spec.attention.params


@pytest.mark.parametrize("name", ["qwen3-8b", "gpt-oss-20b", "olmo-2-7b", "gpt2", "phi-2", "gemma-3-4b", "falcon-7b"])
def test_block_attention_is_the_models_whole(name: str) -> None:
    """q/k norms and sinks are built: the block's attention is the model's, every tensor."""
    data = _invoke("trace", "--preset", name, "--device", "meta", "--block", "--json")
    attention = preset_model(name).attention
    assert data["param_groups"]["attn"] == attention.params
    assert not any("q/k norms" in note or "sinks" in note for note in data["model"]["not_built"])


@pytest.mark.parametrize("name", ["gemma-2-9b", "gemma-3-4b", "llama-4-scout", "llama-3-8b"])
def test_block_names_what_changes_values_at_the_same_shapes(name: str) -> None:
    """Read from the preset's own config.json: Gemma's (1 + w) norms, a score scale that is not
    head_dim^-½, soft-capped scores, Llama 4's L2 q/k norm; a plain Llama has none of them."""
    from ffn_cli.configs.files import load_preset

    config = load_preset(name)
    text = config.get("text_config", config)
    notes = " · ".join(_invoke("trace", "--preset", name, "--device", "meta", "--block", "--json")["model"]["not_built"])
    assert ("(1 + w)" in notes) == config["model_type"].startswith("gemma")
    cap = text.get("attn_logit_softcapping")
    assert (f"soft-capped at {cap:g}" in notes) if cap else "soft-capped" not in notes
    scalar, head_dim = text.get("query_pre_attn_scalar"), text.get("head_dim")
    assert ("^-½" in notes) == (scalar is not None and scalar != head_dim)
    assert ("L2 q/k norm" in notes) == bool(text.get("use_qk_norm"))
