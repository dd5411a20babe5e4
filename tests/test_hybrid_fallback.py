"""Hybrids no reader knows, counted by building them: Bamba and Falcon-H1 name their Mamba-2
mixer `mamba` (BambaMixer, FalconH1Mixer) beside `self_attn` and `feed_forward`. Their parts,
as the fallback attributes them, against transformers' meta build module by module."""

from __future__ import annotations

from typing import Any

import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from ffn_cli.configs import meta_build  # noqa: E402
from ffn_cli.configs.families import model_spec_from_config  # noqa: E402
from ffn_cli.models.count import count_model  # noqa: E402
from tests.tiny_families import SMALL  # noqa: E402

CONFIGS: dict[str, dict[str, Any]] = {
    # Bamba: attention in the layers attn_layer_indices lists, Mamba-2 in the others.
    "bamba": {"num_hidden_layers": 3, "attn_layer_indices": [1], "mamba_n_heads": 8, "mamba_d_head": 16},
    "bamba-moe-free-norm": {"num_hidden_layers": 2, "attn_layer_indices": [], "mamba_n_heads": 4, "mamba_d_head": 32},
    # Falcon-H1: attention and Mamba-2 side by side in every layer; the gated norm optional.
    "falcon_h1": {"mamba_d_ssm": 128, "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_rms_norm": True, "projectors_bias": True},
    "falcon_h1-no-norm": {"mamba_d_ssm": 64, "mamba_n_heads": 4, "mamba_d_head": 16, "mamba_rms_norm": False},
}


def _model_type(name: str) -> str:
    return name.split("-")[0]


def _config(name: str) -> dict[str, Any]:
    overrides = {k: v for k, v in {**SMALL, **CONFIGS[name]}.items() if v is not None}
    config = transformers.AutoConfig.for_model(_model_type(name), **overrides).to_diff_dict()
    return config | {"model_type": _model_type(name)}


def _by_role(config: dict[str, Any]) -> dict[str, int]:
    """Each part from transformers' own modules: a layer's mamba and self_attn are attention
    (its gated norm a norm), feed_forward the FFN, every RMSNorm a norm."""
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    roles = {"attention": 0, "ffn": 0, "norm": 0, "embedding": 0, "head": 0}
    for layer in model.model.layers:
        for name, p in layer.named_parameters():
            block = name.split(".")[0]
            if block.endswith("layernorm") or name.startswith("mamba.norm."):
                roles["norm"] += p.numel()
            elif block in ("mamba", "self_attn"):
                roles["attention"] += p.numel()
            elif block == "feed_forward":
                roles["ffn"] += p.numel()
            else:
                raise AssertionError(f"unexpected block {name}")
    roles["norm"] += model.model.final_layernorm.weight.numel()
    roles["embedding"] = model.model.embed_tokens.weight.numel()
    roles["head"] = model.lm_head.weight.numel()
    assert sum(roles.values()) == sum(p.numel() for p in model.parameters())
    return roles


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parts_against_transformers_modules(name: str) -> None:
    config = _config(name)
    counted = meta_build.count(config, name=name, source="test")
    expected = _by_role(config)
    for kind, params in expected.items():
        assert counted.params_of(kind) == params, kind
    assert counted.params_of("other") == 0
    assert counted.total_params == sum(expected.values())


def test_gemma3n_text_is_counted_by_building_it() -> None:
    """Gemma 3n built by transformers (its reader is held to the same build in
    tests/test_models_transformers.py): the per-layer embeddings with the embeddings, AltUp,
    Laurel and the per-layer input gates as other, each part equal to the modules that hold it,
    and the reader's parts equal to the build's, FFN widths that differ by layer included."""
    overrides = {
        **SMALL,
        "num_hidden_layers": 4,
        "num_kv_shared_layers": 2,
        "intermediate_size": [96, 96, 128, 128],
        "layer_types": ["sliding_attention", "full_attention"] * 2,
        "activation_sparsity_pattern": [0.95, 0.0, 0.0, 0.0],
        "vocab_size_per_layer_input": 128,
        "hidden_size_per_layer_input": 8,
        "laurel_rank": 4,
    }
    config = transformers.AutoConfig.for_model("gemma3n_text", **overrides).to_diff_dict() | {"model_type": "gemma3n_text"}
    counted = meta_build.count(config, name="gemma3n", source="test")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    text = model.model

    def params(*modules: Any) -> int:
        return sum(p.numel() for m in modules for p in m.parameters())

    layers = list(text.layers)
    assert counted.params_of("embedding") == params(text.embed_tokens, text.embed_tokens_per_layer)
    # The KV-shared layers build no k_proj / v_proj: attention differs from layer to layer.
    assert not hasattr(layers[-1].self_attn, "k_proj") and hasattr(layers[0].self_attn, "k_proj")
    assert counted.params_of("attention") == params(*(layer.self_attn for layer in layers))
    assert counted.params_of("ffn") == params(*(layer.mlp for layer in layers))
    other = [text.per_layer_model_projection, text.altup_projections, text.altup_unembed_projections]
    other += [m for layer in layers for m in (layer.altup, layer.laurel, layer.per_layer_input_gate, layer.per_layer_projection)]
    # The norms inside AltUp and Laurel (router_norm, post_laurel_norm) are norms, not other.
    norms_inside = params(*(sub for m in other for sub in m.modules() if type(sub).__name__.endswith("RMSNorm")))
    assert counted.params_of("other") == params(*other) - norms_inside
    assert counted.total_params == sum(p.numel() for p in model.parameters())
    read: dict[str, int] = {}
    for part in count_model(model_spec_from_config(config)).parts:
        read[part.kind] = read.get(part.kind, 0) + part.params
    assert {p.kind: p.params for p in counted.parts if p.params} == {k: v for k, v in read.items() if v}


def test_a_config_transformers_wrote_with_an_infinite_float(tmp_path: Any) -> None:
    # Falcon-H1's time_step_limit is (0.0, inf); transformers writes inf as {"__float__": "Infinity"}
    # and reads it back. The file it wrote is read, and counted as transformers builds it.
    from tests.helpers import cli_json

    config = transformers.AutoConfig.for_model("falcon_h1", **{k: v for k, v in {**SMALL, **CONFIGS["falcon_h1"]}.items() if v is not None})
    config.save_pretrained(tmp_path)
    assert '"__float__": "Infinity"' in (tmp_path / "config.json").read_text()
    with torch.device("meta"):
        built = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.from_pretrained(tmp_path))
    answer = cli_json("params", "--config", str(tmp_path / "config.json"))
    assert answer["total_params"] == sum(p.numel() for p in built.parameters())
    # Read back with its inf, it still has a key in both caches: a second call is a hit, not a build.
    from ffn_cli.configs import built_cache, layout_cache
    from ffn_cli.configs.files import parse_config

    read = parse_config((tmp_path / "config.json").read_text(), "config.json")
    assert read["time_step_limit"][1] == float("inf")
    assert built_cache.cache_key(read) is not None and layout_cache.cache_key(read) is not None
