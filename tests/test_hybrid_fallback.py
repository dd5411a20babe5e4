"""Hybrids no reader knows, counted by building them: Bamba and Falcon-H1 name their Mamba-2
mixer `mamba` (BambaMixer, FalconH1Mixer) beside `self_attn` and `feed_forward`. Their parts,
as the fallback attributes them, against transformers' meta build module by module."""

from __future__ import annotations

from typing import Any

import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from ffn_cli.models import meta_build  # noqa: E402
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
