"""Every family `ffn params --config` reads, held against the model transformers builds from
the same config on the meta device: the total, each part where module names allow, the MoE
active count (from the built experts), and the config classes' defaults."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ffn_cli.configs.defaults import DEFAULTS
from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES, model_spec_from_config
from ffn_cli.configs.files import load_preset
from ffn_cli.models.count import count_model
from tests.helpers import read_preset_names
from tests.model_configs import CASES, ENCODERS, NOT_IN_TRANSFORMERS, WRAPPERS, small_config

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


def _build(config: dict[str, Any]) -> Any:
    cfg = transformers.AutoConfig.for_model(**config)
    auto = (
        transformers.AutoModel
        if config["model_type"] in ENCODERS
        else (transformers.AutoModelForImageTextToText if config["model_type"] in WRAPPERS else transformers.AutoModelForCausalLM)
    )
    with torch.device("meta"):
        return auto.from_config(cfg)


_KIND_RULES: list[tuple[str, str]] = [
    (r"(vision_tower|vision_model|multi_modal_projector)\.", "vision"),
    (r"(^|\.)(lm_head|embed_out)\.", "head"),
    (r"(^|\.)pooler\.", "pooler"),
    (
        r"(embed_tokens|embed_tokens_per_layer|embed_in|embeddings|word_embeddings|position_embeddings|token_type_embeddings|wte|wpe)"
        r"\.weight$",
        "embedding",
    ),
    (r"\.LayerNorm\.|(^|\.)(ln_\w+|ln_f|norm_f|\w*layernorm|\w*layer_norm|norm|\w+_norm)\.(weight|bias)$", "norm"),
    # Gemma 3n's AltUp, Laurel and per-layer inputs (their norms are norms, above).
    (r"(^|\.)(altup|altup_projections|altup_unembed_projections|laurel|per_layer_\w+)\.", "other"),
    (r"\.(self_attn|attn|crossattention|attention|self_attention|linear_attn|conv|mamba)\.", "attention"),
    (r"\.(mlp|feed_forward|block_sparse_moe|shared_mlp|intermediate|output)\.", "ffn"),
]


def _kind(name: str) -> str:
    # A norm inside the attention module (q_norm, kv_a_layernorm) belongs to the attention.
    if re.search(r"\.(self_attn|attention|self_attention)\.\w*(norm|layernorm)\.", name) and ".output.LayerNorm." not in name:
        return "attention"
    for pattern, kind in _KIND_RULES:
        if re.search(pattern, name):
            return kind
    raise AssertionError(f"no part for {name}")


# Nemotron-H names every layer's one block `mixer`: its layer's block type says which it is.
_BLOCK_PART = {"linear_attention": "mamba", "full_attention": "self_attn", "mlp": "mlp", "moe": "mlp"}


def _part_name(model: Any, name: str) -> str:
    found = re.search(r"layers\.(\d+)\.mixer\.", name)
    if found is None or model.config.model_type != "nemotron_h":
        return name
    return name.replace(".mixer.", f".{_BLOCK_PART[model.config.layers_block_type[int(found.group(1))]]}.", 1)


def _parts(model: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, p in model.named_parameters():
        kind = _kind(_part_name(model, name))
        out[kind] = out.get(kind, 0) + p.numel()
    return out


def _ours(model: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in model.parts:
        if part.params:
            out[part.kind] = out.get(part.kind, 0) + part.params
    return out


# Where transformers keeps a vision tower and its projector in the multimodal models these cover.
_TOWERS = ("vision_model", "multi_modal_projector", "vision_tower")


def _experts_active(model: Any, config: dict[str, Any], ours: Any) -> int:
    """The active count from the built model: total minus the routed experts a token skips,
    E − k of every MoE layer's experts module, its parameters split evenly over E, and minus a
    vision tower and its projector (a text token never runs them)."""
    spec = ours.spec
    skipped = sum(p.numel() for name, p in model.named_parameters() if name.split(".")[0] in _TOWERS or ".vision_model." in f".{name}")
    for name, module in model.named_modules():
        if name.endswith(".experts") and not name.endswith("shared_experts"):
            count = sum(p.numel() for p in module.parameters())
            experts, k = spec.moe_ffn.experts, spec.moe_ffn.top_k
            skipped += count // experts * (experts - k)
    return sum(p.numel() for p in model.parameters()) - skipped


def test_the_small_configs_cover_every_family() -> None:
    assert {t for t, _ in CASES} == set(SUPPORTED_MODEL_TYPES) - NOT_IN_TRANSFORMERS


@pytest.mark.parametrize(("model_type", "keys"), CASES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CASES)])
def test_total_and_parts_equal_transformers(model_type: str, keys: dict[str, Any]) -> None:
    config = small_config(model_type, keys)
    model = _build(config)
    ours = count_model(model_spec_from_config(config))
    assert ours.total_params == sum(p.numel() for p in model.parameters())
    assert _ours(ours) == _parts(model)
    if ours.spec.is_moe:
        assert ours.active_params == _experts_active(model, config, ours)


@pytest.mark.parametrize("model_type", sorted(set(DEFAULTS) - NOT_IN_TRANSFORMERS))
def test_defaults_are_the_config_class_defaults(model_type: str) -> None:
    cfg = transformers.AutoConfig.for_model(model_type)
    for key, value in DEFAULTS[model_type].items():
        # A key the class lacks (Mistral's attention_bias) is one its modelling code never reads.
        if key not in ("attention_bias", "mlp_bias", "hidden_act") or hasattr(cfg, key):
            assert getattr(cfg, key) == value, key


@pytest.mark.parametrize("model_type", ["llama", "mistral", "qwen2", "gemma", "olmo", "gpt2", "bert", "phi", "gemma3n_text"])
def test_an_empty_config_counts_as_the_class_defaults(model_type: str) -> None:
    model = _build({"model_type": model_type})
    assert count_model(model_spec_from_config({"model_type": model_type})).total_params == sum(p.numel() for p in model.parameters())


@pytest.mark.slow
@pytest.mark.parametrize("name", read_preset_names())
def test_every_full_size_preset_equals_transformers(name: str) -> None:
    config = {k: v for k, v in load_preset(name).items() if not k.startswith("_")}
    if config["model_type"] in NOT_IN_TRANSFORMERS:
        pytest.skip("remote code")
    model = _build(config)
    ours = count_model(model_spec_from_config(config))
    assert ours.total_params == sum(p.numel() for p in model.parameters())
    if ours.spec.is_moe:
        assert ours.active_params == _experts_active(model, config, ours)


# --- Gemma 3n: layers that differ, and tensors beside attention and FFN ------------------------


def _params(*modules: Any) -> int:
    return sum(p.numel() for m in modules for p in m.parameters())


def _gemma3n_small() -> dict[str, Any]:
    return small_config(*next(case for case in CASES if case[0] == "gemma3n_text"))


def test_gemma3n_kv_shared_layers_build_no_keys_or_values() -> None:
    config = _gemma3n_small()
    model, spec = _build(config), model_spec_from_config(config)
    assert spec.kv_shared_layers == (2, 3)
    for i, layer in enumerate(model.model.layers):
        assert hasattr(layer.self_attn, "k_proj") == (i not in spec.kv_shared_layers)
        assert _params(layer.self_attn) == spec.attention_params_of(i)


@pytest.mark.parametrize("name", ["gemma-3n-e4b", "gemma-3n-e2b"])
def test_gemma3n_presets_equal_transformers_row_by_row(name: str) -> None:
    config = {k: v for k, v in load_preset(name).items() if not k.startswith("_")}
    model = _build(config)
    ours = count_model(model_spec_from_config(config))
    assert ours.total_params == sum(p.numel() for p in model.parameters())
    assert _ours(ours) == _parts(model)
    text, rows = model.model, {str(p.name): p.params for p in ours.parts}
    layers = list(text.layers)

    def norms(*modules: Any) -> int:  # the RMSNorms inside a module: counted with the layer norms
        return _params(*(sub for m in modules for sub in m.modules() if type(sub).__name__.endswith("RMSNorm")))

    assert rows["per-layer embeddings"] == _params(text.embed_tokens_per_layer)
    assert rows["per-layer input projection"] == _params(text.per_layer_model_projection)
    assert rows["per-layer input norm"] == _params(text.per_layer_projection_norm)
    assert rows["AltUp projections"] == _params(text.altup_projections, text.altup_unembed_projections)
    assert rows["attention"] + rows["attention, shared KV"] == _params(*(layer.self_attn for layer in layers))
    assert rows["FFN"] == _params(*(layer.mlp for layer in layers))
    assert rows["AltUp"] == _params(*(layer.altup for layer in layers)) - norms(*(layer.altup for layer in layers))
    assert rows["Laurel"] == _params(*(layer.laurel for layer in layers)) - norms(*(layer.laurel for layer in layers))
    gates = [m for layer in layers for m in (layer.per_layer_input_gate, layer.per_layer_projection)]
    assert rows["per-layer input gate"] == _params(*gates)
    attention_norms = norms(*(layer.self_attn for layer in layers))
    assert rows["layer norms"] == norms(*layers) - attention_norms


def test_gemma3n_forward_flops_equal_flop_counter_mode() -> None:
    """One token through the built model: every matmul FlopCounterMode sees is the model's
    matmul FLOPs per token (AltUp's router twice, its predictions' mix of the copies, Laurel,
    the per-layer inputs, the LM head) and, at length 1, 4 · heads · head_dim of scores a layer."""
    from torch.utils.flop_counter import FlopCounterMode

    config = _gemma3n_small()
    cfg = transformers.AutoConfig.for_model(**config)
    cfg._attn_implementation = "eager"
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    ours = count_model(model_spec_from_config(config))
    a = ours.spec.attention
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(input_ids=torch.tensor([[3]]))
    scores = ours.spec.n_layers * 4 * a.n_heads * a.head_dim
    assert counter.get_total_flops() == ours.matmul_flops_per_token + scores


# Routers' score biases: buffers, so no parameter count above sees them.
_SCORE_BIASES = ("e_score_correction_bias", "expert_bias")


@pytest.mark.parametrize(("model_type", "keys"), CASES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CASES)])
def test_router_score_bias_is_the_buffer_transformers_builds(model_type: str, keys: dict[str, Any]) -> None:
    # A reader's router_score_bias says whether the model's routers hold a score bias the
    # checkpoint stores: a persistent buffer (in the state dict, not among the parameters) of
    # transformers' own model.
    config = small_config(model_type, keys)
    model = _build(config)
    params = {n for n, _p in model.named_parameters()}
    buffers = [n for n in model.state_dict() if n.rpartition(".")[2] in _SCORE_BIASES and n not in params]
    assert model_spec_from_config(config).router_score_bias == bool(buffers)
