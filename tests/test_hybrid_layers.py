"""Layers that differ within one model: Qwen3-Next's Gated DeltaNet and attention layers, each
held to FlopCounterMode on transformers' own module at several lengths on the CPU, and the
FLOPs over length that keep them apart."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.configs.families import model_spec_from_config
from ffn_cli.configs.source import preset_model
from ffn_cli.models.count import count_model
from ffn_cli.models.seq_flops import flops_over_length, model_stack
from tests.model_configs import CASES, small_config

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

KEYS = next(keys for model_type, keys in CASES if model_type == "qwen3_next")


def _global_counts(module: Any, *args: Any, **kwargs: Any) -> dict[str, int]:
    from torch.utils.flop_counter import FlopCounterMode

    # Frozen: transformers >= 5.25 runs its mixers' hub-kernel layers as modules, and
    # FlopCounterMode's module tracker fails on a parameter passed to one that requires grad.
    module.requires_grad_(False)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        module(*args, **kwargs)
    return {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}


@pytest.mark.parametrize("seq_len", [5, 17, 70])
def test_each_layer_kind_against_flop_counter_on_transformers_modules(seq_len: int) -> None:
    from transformers.models.qwen3_next import modeling_qwen3_next as qn

    config_dict = small_config("qwen3_next", KEYS)
    config = transformers.AutoConfig.for_model(**config_dict)
    config._attn_implementation = "eager"
    spec = model_spec_from_config(config_dict)
    assert spec.mixer is not None
    torch.manual_seed(0)
    batch = 2
    tokens = batch * seq_len
    x = torch.randn(batch, seq_len, config.hidden_size)
    # Gated DeltaNet (layer 0): its projections, per token, at every length.
    delta = _global_counts(qn.Qwen3NextGatedDeltaNet(config, layer_idx=0), x)
    assert delta["aten.mm"] == spec.mixer.projection_flops * tokens
    # Attention (layer 3): projections with the output gate, and scores over every key
    # (no mask given: every query reads all seq_len keys).
    rotary = qn.Qwen3NextRotaryEmbedding(config)
    position = rotary(x, torch.arange(seq_len)[None].expand(batch, seq_len))
    attention = _global_counts(qn.Qwen3NextAttention(config, layer_idx=3), x, position_embeddings=position, attention_mask=None)
    assert attention["aten.mm"] == spec.attention_layer_flops * tokens
    assert attention["aten.bmm"] == spec.attention.score_flops_per_token(seq_len) * tokens


def test_only_the_attention_layers_pay_for_the_length() -> None:
    spec = preset_model("qwen3-next-80b-a3b")
    assert spec.mixer is not None and len(spec.mixer.layers) == 36 and len(spec.attention_layers) == 12
    stack = model_stack(spec, (None,) * spec.n_layers, causal=True)
    short, long = flops_over_length(stack, [4096, 131072])
    # Causal: (L + 1) / 2 keys per query on average, in the 12 attention layers only.
    per_key = spec.attention.score_flops_per_token(1)
    assert short.scores == 12 * per_key * (4096 + 1) / 2 and long.scores == 12 * per_key * (131072 + 1) / 2
    assert short.projections == long.projections == 12 * spec.attention_layer_flops + 36 * spec.mixer.projection_flops
    assert count_model(spec).matmul_flops_per_token - 2 * spec.d_model * spec.vocab_size == short.ffn + short.projections


def test_params_shows_the_layer_kinds_apart() -> None:
    result = CliRunner().invoke(app, ["params", "--preset", "qwen3-next-80b-a3b", "--seq-len", "4096,131072"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "layers: 3 × Gated DeltaNet + 1 × attention, × 12" in text
    assert "Gated DeltaNet in 36 of 48 layers" in text
    data = json.loads(CliRunner().invoke(app, ["params", "--preset", "qwen3-next-80b-a3b", "--seq-len", "4096", "--json"]).stdout)
    parts = {p["name"]: p for p in data["parts"]}
    assert parts["Gated DeltaNet"]["copies"] == 36 and parts["attention"]["copies"] == 12
    assert data["flops_over_seq_len"]["mixers"].count("Gated DeltaNet") == 36


@pytest.mark.parametrize("layer", ["0", "3"])
def test_block_is_refused_in_one_line(layer: str) -> None:
    result = CliRunner().invoke(app, ["trace", "--preset", "qwen3-next-80b-a3b", "--device", "meta", "--block", "--layer", layer])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "drop --block" in result.output


# The small LFM2 and LFM2-MoE configs with the short conv's biases, and transformers' module names.
LFM2_FAMILIES = {"lfm2": "Lfm2", "lfm2_moe": "Lfm2Moe"}
LFM2_KEYS = {t: next(keys for model_type, keys in CASES if model_type == t and "conv_bias" in keys) for t in LFM2_FAMILIES}


@pytest.mark.parametrize("model_type", sorted(LFM2_FAMILIES))
@pytest.mark.parametrize("seq_len", [5, 17, 70])
def test_lfm2_layer_kinds_against_flop_counter_on_transformers_modules(model_type: str, seq_len: int) -> None:
    import importlib

    lm = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    prefix = LFM2_FAMILIES[model_type]
    config_dict = small_config(model_type, LFM2_KEYS[model_type])
    config = transformers.AutoConfig.for_model(**config_dict)
    config._attn_implementation = "eager"
    spec = model_spec_from_config(config_dict)
    assert spec.mixer is not None and spec.mixer.kind == "short conv"
    conv_layer, attention_layer = spec.mixer.layers[0], spec.attention_layers[0]
    torch.manual_seed(0)
    batch = 2
    tokens = batch * seq_len
    x = torch.randn(batch, seq_len, config.hidden_size)
    # Short convolution: its two projections per token, and the depthwise conv at every output
    # position; transformers' reference conv pads by kernel - 1 on both sides and drops the
    # kernel - 1 positions past the end, so it computes seq_len + kernel - 1 of them.
    module = getattr(lm, f"{prefix}ShortConv")(config, layer_idx=conv_layer)
    conv = _global_counts(module, x)
    kernel = config.conv_L_cache
    # conv_bias: the projections are addmm, whose count is the matmul's alone.
    assert conv.get("aten.mm", 0) + conv.get("aten.addmm", 0) == spec.mixer.projection_flops * tokens
    assert conv["aten.convolution"] == spec.mixer.conv_flops * batch * (seq_len + kernel - 1)
    assert spec.mixer.params == sum(p.numel() for p in module.parameters())
    # Attention: projections, and scores over every key (no mask given).
    rotary = getattr(lm, f"{prefix}RotaryEmbedding")(config)
    position = rotary(x, torch.arange(seq_len)[None].expand(batch, seq_len))
    attention_module = getattr(lm, f"{prefix}Attention")(config, layer_idx=attention_layer)
    attention = _global_counts(attention_module, x, position_embeddings=position, attention_mask=None)
    assert attention["aten.mm"] == spec.attention_layer_flops * tokens
    assert attention["aten.bmm"] == spec.attention.score_flops_per_token(seq_len) * tokens


def test_lfm2_only_its_attention_layers_pay_for_the_length() -> None:
    spec = preset_model("lfm2-1.2b")
    assert spec.mixer is not None and spec.attention_layers == (2, 5, 8, 10, 12, 14)
    stack = model_stack(spec, (None,) * spec.n_layers, causal=True)
    short, long = flops_over_length(stack, [4096, 32768, 131072])[::2]
    per_key = spec.attention.score_flops_per_token(1)
    assert short.scores == 6 * per_key * (4096 + 1) / 2 and long.scores == 6 * per_key * (131072 + 1) / 2
    assert short.projections == 6 * spec.attention_layer_flops + 10 * spec.mixer.projection_flops
    result = CliRunner().invoke(app, ["params", "--preset", "lfm2-1.2b", "--seq-len", "4096,131072"])
    assert result.exit_code == 0, result.output
    assert "layers: 10 × short conv + 6 × attention" in " ".join(result.output.split())


GRANITE_CASES = [keys for model_type, keys in CASES if model_type == "granitemoehybrid"]


@pytest.mark.parametrize("case", range(len(GRANITE_CASES)))
@pytest.mark.parametrize("seq_len", [5, 17, 70])
def test_mamba2_and_attention_against_flop_counter_on_transformers_modules(case: int, seq_len: int) -> None:
    from transformers.models.granitemoehybrid import modeling_granitemoehybrid as gm

    config_dict = small_config("granitemoehybrid", GRANITE_CASES[case])
    config = transformers.AutoConfig.for_model(**config_dict)
    config._attn_implementation = "eager"
    spec = model_spec_from_config(config_dict)
    assert spec.mixer is not None and spec.mixer.kind == "Mamba-2"
    torch.manual_seed(0)
    batch = 2
    tokens = batch * seq_len
    x = torch.randn(batch, seq_len, config.hidden_size)
    # Mamba-2: in_proj and out_proj per token; the depthwise conv over x, B and C at every
    # output position (the reference pads kernel - 1 on both sides and drops the positions past
    # the end). The chunked state-space scan (bmm): tests/test_mixer_flops.py.
    module = gm.GraniteMoeHybridMambaLayer(config, layer_idx=spec.mixer.layers[0])
    mamba = _global_counts(module, x)
    assert mamba.get("aten.mm", 0) + mamba.get("aten.addmm", 0) == spec.mixer.projection_flops * tokens
    assert mamba["aten.convolution"] == spec.mixer.conv_flops * batch * (seq_len + config.mamba_d_conv - 1)
    params = {n: p.numel() for n, p in module.named_parameters()}
    assert spec.mixer.params == sum(params.values()) - params["norm.weight"] and spec.mixer.norm_params == params["norm.weight"]
    # Attention (no rotary in these configs): projections, and scores over every key.
    attention = _global_counts(gm.GraniteMoeHybridAttention(config, layer_idx=spec.attention_layers[0]), x, attention_mask=None)
    assert attention.get("aten.mm", 0) + attention.get("aten.addmm", 0) == spec.attention_layer_flops * tokens
    assert attention["aten.bmm"] == spec.attention.score_flops_per_token(seq_len) * tokens


# --- Nemotron-H: one block a layer, a token mixer or an FFN ------------------------------------

NEMOTRON_CASES = [keys for model_type, keys in CASES if model_type == "nemotron_h"]


def _meta_model(config: dict[str, Any]) -> Any:
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))


@pytest.mark.parametrize("case", range(2))
@pytest.mark.parametrize("seq_len", [5, 17, 70])
def test_nemotron_h_mamba2_and_attention_against_flop_counter(case: int, seq_len: int) -> None:
    from transformers.models.nemotron_h import modeling_nemotron_h as nh

    config_dict = small_config("nemotron_h", NEMOTRON_CASES[case])
    config = transformers.AutoConfig.for_model(**config_dict)
    config._attn_implementation = "eager"
    spec = model_spec_from_config(config_dict)
    assert spec.mixer is not None and spec.mixer.kind == "Mamba-2"
    torch.manual_seed(0)
    batch = 2
    tokens = batch * seq_len
    x = torch.randn(batch, seq_len, config.hidden_size)
    module = nh.NemotronHMamba2Mixer(config, layer_idx=spec.mixer.layers[0])
    mamba = _global_counts(module, x)
    assert mamba.get("aten.mm", 0) + mamba.get("aten.addmm", 0) == spec.mixer.projection_flops * tokens
    assert mamba["aten.convolution"] == spec.mixer.conv_flops * batch * (seq_len + config.conv_kernel - 1)
    params = {n: p.numel() for n, p in module.named_parameters()}
    assert spec.mixer.params == sum(params.values()) - params["norm.weight"] and spec.mixer.norm_params == params["norm.weight"]
    # Attention without rotary: projections, and scores over every key (no mask given).
    attention = _global_counts(nh.NemotronHAttention(config, layer_idx=spec.attention_layers[0]), x, attention_mask=None)
    assert attention["aten.mm"] == spec.attention_layer_flops * tokens
    assert attention["aten.bmm"] == spec.attention.score_flops_per_token(seq_len) * tokens


def test_nemotron_h_layers_are_one_block_each() -> None:
    # M-*EM-: Mamba-2, MLP, attention, MoE, Mamba-2, MLP, as transformers builds them.
    config = small_config("nemotron_h", NEMOTRON_CASES[0])
    spec = model_spec_from_config(config)
    blocks = _meta_model(config).config.layers_block_type
    assert spec.n_layers == len(blocks) == 6
    assert spec.mixer is not None and spec.mixer.layers == tuple(i for i, b in enumerate(blocks) if b == "linear_attention")
    assert spec.attention_layers == tuple(i for i, b in enumerate(blocks) if b == "full_attention")
    assert spec.dense_layers == tuple(i for i, b in enumerate(blocks) if b == "mlp")
    assert spec.moe_layers == tuple(i for i, b in enumerate(blocks) if b == "moe")
    assert spec.no_ffn_layers == (0, 2, 4) and spec.no_mixer_layers == (1, 3, 5)
    # FLOPs per token: every layer's one block, projections and FFNs apart.
    stack = model_stack(spec, (None,) * spec.n_layers, causal=True)
    (row,) = flops_over_length(stack, [64])
    mlp, moe = spec.dense_ffn, spec.moe_ffn
    assert mlp is not None and moe is not None
    from ffn_cli.accounting import matmul_flops_per_token

    assert row.ffn == 2 * matmul_flops_per_token(mlp) + matmul_flops_per_token(moe)
    assert row.projections == spec.attention_layer_flops + 2 * spec.mixer.projection_flops
    assert row.scores == spec.attention.score_flops_per_token(1) * (64 + 1) / 2
    assert count_model(spec).matmul_flops_per_token - 2 * spec.d_model * spec.vocab_size == row.ffn + row.projections


def test_nemotron_h_8b_part_by_part_against_transformers() -> None:
    """The Nemotron-H-8B preset (no published total at hand): its total and every part against
    transformers' meta build, module by module."""
    from ffn_cli.configs.files import load_preset

    config = {k: v for k, v in load_preset("nemotron-h-8b").items() if not k.startswith("_")}
    model = _meta_model(config)
    parts = {p.name: p for p in count_model(model_spec_from_config(config)).parts}
    by_block: dict[str, int] = {}
    for layer in model.model.layers:
        kind = layer.block_type
        mixer = {n: p.numel() for n, p in layer.mixer.named_parameters()}
        if kind == "linear_attention":
            by_block["Mamba-2 norms"] = by_block.get("Mamba-2 norms", 0) + mixer.pop("norm.weight")
        by_block[kind] = by_block.get(kind, 0) + sum(mixer.values())
        by_block["layer norms"] = by_block.get("layer norms", 0) + layer.norm.weight.numel()
    assert by_block["linear_attention"] == parts["Mamba-2"].params and parts["Mamba-2"].copies == 24
    assert by_block["full_attention"] == parts["attention"].params and parts["attention"].copies == 4
    assert by_block["mlp"] == parts["FFN"].params and parts["FFN"].copies == 24
    assert by_block["Mamba-2 norms"] == parts["Mamba-2 norms"].params and by_block["layer norms"] == parts["layer norms"].params
    assert (
        model.lm_head.weight.numel() == parts["LM head"].params
        and model.model.embeddings.weight.numel() == parts["token embeddings"].params
    )
    assert sum(p.params for p in parts.values()) == sum(p.numel() for p in model.parameters())


def test_nemotron_h_params_through_its_reader(tmp_path: Any) -> None:
    # A config file, as a checkpoint's config.json: the reader's parts, not the fallback's build.
    from ffn_cli.configs.files import load_preset

    path = tmp_path / "config.json"
    path.write_text(json.dumps(load_preset("nemotron-h-8b")), encoding="utf-8")
    result = CliRunner().invoke(app, ["params", "--config", str(path), "--seq-len", "4096,131072", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    parts = {p["name"]: p for p in data["parts"]}
    assert parts["Mamba-2"]["copies"] == 24 and parts["FFN"]["copies"] == 24 and parts["attention"]["copies"] == 4
    pattern = load_preset("nemotron-h-8b")["hybrid_override_pattern"]
    assert data["config"]["no_ffn_layers"] == [i for i, c in enumerate(pattern) if c in "M*"]
    assert data["config"]["no_mixer_layers"] == [i for i, c in enumerate(pattern) if c in "-E"]
    flops = data["flops_over_seq_len"]
    assert flops["layer_pattern"] == "24 × Mamba-2 + 24 × FFN + 4 × attention"
    assert flops["mixers"].count("Mamba-2") == 24 and flops["ffn_only"].count(True) == 24
    text = " ".join(CliRunner().invoke(app, ["params", "--preset", "nemotron-h-8b"]).output.split())
    assert "(layers: 24 × Mamba-2 + 24 × FFN + 4 × attention)" in text and "relu2, d_ff 21,504 (24 of 52 layers)" in text


def test_nemotron_h_weights_hold_every_parameter() -> None:
    # The weight tensors (what --weights and --tp price) sum to the meta build's parameters.
    from ffn_cli.costs.weights import weight_tensors

    for keys in NEMOTRON_CASES:
        config = small_config("nemotron_h", keys)
        assert sum(t.params for t in weight_tensors(model_spec_from_config(config))) == sum(
            p.numel() for p in _meta_model(config).parameters()
        )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"no_ffn_layers": (0, 1, 3), "no_mixer_layers": (2, 3)}, "needs a token mixer"),
        ({"no_ffn_layers": (4,)}, "must be layer indices"),
        ({"no_ffn_layers": (0, 1, 2), "no_mixer_layers": (3,)}, "a MoE layer has an FFN"),
        ({"no_ffn_layers": (1,), "no_mixer_layers": (0, 2, 3)}, "a Mamba-2 layer has a token mixer"),
    ],
)
def test_nemotron_h_spec_refuses_a_layer_with_neither_block(changes: dict[str, Any], message: str) -> None:
    from dataclasses import replace

    from ffn_cli.errors import FFNError

    spec = model_spec_from_config(small_config("nemotron_h", NEMOTRON_CASES[1]))  # mamba, attention, moe, mlp
    assert (spec.no_ffn_layers, spec.no_mixer_layers) == ((0, 1), (2, 3))
    with pytest.raises(FFNError, match=message):
        replace(spec, **changes)


def test_nemotron_h_trace_picks_an_ffn_layer_and_refuses_one_without(tmp_path: Any) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(small_config("nemotron_h", NEMOTRON_CASES[1])), encoding="utf-8")
    result = CliRunner().invoke(app, ["trace", "--config", str(path), "--device", "meta", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"]["layer"] == 2  # the MoE layer
    for args, text in ((["--layer", "0"], "without an FFN"), (["--layer", "3", "--block"], "an FFN alone")):
        result = CliRunner().invoke(app, ["trace", "--config", str(path), "--device", "meta", *args])
        assert result.exit_code == 2 and result.output.count("\n") == 1 and text in result.output, result.output


def test_nemotron_h_decode_roofline_by_hand() -> None:
    """One decode token at context 1000, bf16: each layer's one block read once, by hand from
    the shapes; the 4 attention layers read their 1001 keys and write the new one (2·8·128
    values each), the 24 Mamba-2 layers read and write their state (128 heads × 64 × 128, and
    the conv's 3 latest of 8,192 + 2·8·128 channels)."""
    result = CliRunner().invoke(
        app, ["params", "--preset", "nemotron-h-8b", "--gpu", "h100", "--phase", "decode", "--batch", "1", "--seq-len", "1000", "--json"]
    )
    assert result.exit_code == 0, result.output
    model = json.loads(result.stdout)["roofline"]["cases"][0]["model"]
    d, vocab = 4096, 131072
    mlp = 2 * d * 21504
    attention = d * 32 * 128 * 2 + 2 * d * 8 * 128
    conv = 8192 + 2 * 8 * 128
    mamba_in = d * (8192 + conv + 128)
    mamba = mamba_in + conv * 4 + conv + 3 * 128 + 8192 * d + 8192  # conv weight and bias, dt_bias / A_log / D, out_proj, norm
    assert model["weight_bytes"] == 2 * (24 * mlp + 4 * attention + 24 * mamba + vocab * d + d)
    scores = 4 * 1001 * 2 * 2 * 32 * 128
    # Each Mamba-2 layer's one token beyond its projections: the conv's 4 taps over every channel,
    # and the recurrent state's update by dt·B ⊗ x and its read by C (64 × 128 per head each).
    recurrent = 2 * conv * 4 + 128 * 2 * (2 * 64 * 128)
    assert model["flops"] == 2 * (24 * mlp + 4 * attention + 24 * (mamba_in + 8192 * d) + vocab * d) + scores + 24 * recurrent
    state = 128 * 64 * 128 + 3 * conv
    assert model["kv_cache_bytes"] == 4 * 1002 * 2 * 8 * 128 * 2 + 24 * 2 * state * 2


@pytest.mark.parametrize("mlp_bias", [False, True])
def test_nemotron_h_latent_moe_against_transformers(tmp_path: Any, mlp_bias: bool) -> None:
    # Nemotron 3 Super's and Ultra's latent MoE: routed experts read and write a latent of 32
    # between fc1_latent_proj (d → 32) and fc2_latent_proj (32 → d), biased with mlp_bias; the
    # router and the shared expert read d. The reader's count is transformers' build; its FLOPs of
    # layer 3 (the MoE) are FlopCounterMode's over transformers' own layer, 7 tokens of k experts.
    from ffn_cli.models.count import count_model
    from tests.module_flops import module_flops

    config = small_config("nemotron_h", NEMOTRON_CASES[0]) | {"moe_latent_size": 32, "mlp_bias": mlp_bias}
    spec = model_spec_from_config(config)
    assert spec.moe_ffn is not None and spec.moe_ffn.latent == 32 and spec.moe_layers == (3,)
    assert count_model(spec).total_params == sum(p.numel() for p in _meta_model(config).parameters())
    counts = module_flops(config, torch.randint(1, 100, (1, 7)))
    assert counts["layers.3.mixer"] == 7 * spec.ffn_matmul_flops(spec.moe_ffn)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    result = CliRunner().invoke(app, ["params", "--config", str(path), "--gpu", "h200", "--weights", "fp8", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "model_class" not in data  # read, not built
    latent = next(r for r in data["checkpoint"]["roles"] if r["role"] == "latent")
    assert latent["params"] == 2 * 32 * config["hidden_size"] and latent["format"] == "fp8"
    # The trace writes the latent into the formula, and each expert's without the biases it lacks
    # (mlp_bias biases the shared MLP and the projections alone).
    result = CliRunner().invoke(app, ["trace", "--config", str(path), "--layer", "3", "--device", "meta"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "W_fc2·Σ_{i∈top-k} ĝ_i·expert_i(W_fc1·x)" in result.output
    assert "W_down·relu(W_up·x)²" in result.output and "b_up" not in result.output.split("Weights each step uses")[0]


def test_nemotron_h_of_mixers_alone_counts_and_refuses_a_trace(tmp_path: Any) -> None:
    config = small_config("nemotron_h", NEMOTRON_CASES[0]) | {"hybrid_override_pattern": "MM*M"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    args = ["params", "--config", str(path), "--seq-len", "64", "--gpu", "h100", "--phase", "decode", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total_params"] == sum(p.numel() for p in _meta_model(config).parameters()) and data["ffn_params"] == 0
    assert data["roofline"]["cases"][0]["ffn_one_layer"]["flops"] == 0
    result = CliRunner().invoke(app, ["trace", "--config", str(path), "--device", "meta"])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "has no layer with an FFN" in result.output


def test_gemma3n_decode_roofline_and_state_by_hand() -> None:
    """One decode token at context 1000, bf16, Gemma 3n E4B: every weight read once (a table one
    row), by hand from the shapes; the 15 KV-shared layers project no keys or values, write no
    cache and keep none, but read the keys of the layer they share (the 28 sliding layers their
    512 latest, the 7 full ones all 1,001)."""
    args = ["params", "--preset", "gemma-3n-e4b", "--gpu", "h100", "--phase", "decode", "--batch", "1", "--seq-len", "1000", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    model = data["roofline"]["cases"][0]["model"]
    d, vocab, ffn, q, kv, layers = 2048, 262400, 3 * 2048 * 16384, 8 * 256, 2 * 256, 35
    own, shared = 2 * d * q + 2 * d * kv + 2 * 256, 2 * d * q + 256  # q, o (k, v) and their norms
    per_layer = (d + 4 * 4 + 16 * 4 + 4 * d) + 2 * 64 * d + 2 * 256 * d  # AltUp, Laurel, per-layer input gate
    beside = 35 * 256 + 35 * 256 * d + 256 + 6 * d * d  # a row of the per-layer table, its projection and norm, AltUp's 6
    weights = layers * ffn + 20 * own + 15 * shared + vocab * d + d + layers * per_layer + beside
    assert model["weight_bytes"] == 2 * weights
    altup = 2 * 2 * 4 * d + 2 * 4 * 16 + 2 * 4 * 4 + 2 * d * 16  # router twice, both coefficients, the copies' mix
    extra = 2 * 35 * 256 * d + 6 * 2 * d * d + layers * (altup + 4 * 64 * d + 4 * 256 * d)
    projections = 20 * 2 * (2 * d * q + 2 * d * kv) + 15 * 2 * 2 * d * q
    scores = 4 * 8 * 256 * (7 * 1001 + 28 * 512)
    assert model["flops"] == 2 * (layers * ffn + vocab * d) + projections + extra + scores
    width = 2 * 2 * 256 * 2  # K and V, 2 heads × 256, bf16
    assert model["kv_cache_bytes"] == width * (4 * 1002 + 16 * 513 + 3 * 1001 + 12 * 512)
    state = {row["kind"]: (row["layers"], row["bytes"]) for row in data["decode_state"]["kinds"]}
    # the shared layers keep no cache: a row of their own, so that the table names all 35 layers
    assert state == {"attention, sliding 512": (16, 16 * 511 * width), "attention": (4, 4 * 1000 * width), "attention, shared KV": (15, 0)}


def test_tp_cuts_a_mixers_heads_and_groups_as_vllm_does() -> None:
    # Nemotron 3 Super's Mamba-2: 128 heads in 8 groups of B and C. vLLM's MambaMixer2 cuts the
    # groups over --tp (or copies a single one), so --tp 16 cannot run it though every head and
    # hidden unit would divide; --tp 8 can. Qwen3-Next's Gated DeltaNet: 32 value heads.
    result = CliRunner().invoke(app, ["params", "--preset", "nemotron-3-super-120b-a12b", "--tp", "16"])
    assert result.exit_code == 2 and "128 Mamba-2 heads, 8 Mamba-2 groups); 2, 4, 8 do" in " ".join(result.output.split())
    assert CliRunner().invoke(app, ["params", "--preset", "nemotron-3-super-120b-a12b", "--tp", "8"]).exit_code == 0
    result = CliRunner().invoke(app, ["params", "--preset", "qwen3-next-80b-a3b", "--tp", "3"])
    assert result.exit_code == 2 and "32 Gated DeltaNet heads" in " ".join(result.output.split())


def test_a_latent_moe_over_expert_parallel_ranks_matches_the_unsharded_module(tmp_path: Any) -> None:
    # Each rank projects its own tokens down into the latent, sends latent rows to the experts'
    # owners, and projects the combined rows back up: the same output as the unsharded layer.
    config = small_config("nemotron_h", NEMOTRON_CASES[0]) | {"moe_latent_size": 32}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    result = CliRunner().invoke(app, ["trace", "--config", str(path), "--layer", "3", "--ep", "2", "--check"])
    assert result.exit_code == 0, result.output
    assert "matches the unsharded module" in " ".join(result.output.split())
