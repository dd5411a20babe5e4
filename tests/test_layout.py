"""The layout walk (ffn_cli/models/layout.py) against what does not come from it: published
parameter totals, transformers' own models built on the meta device, and hand counts. The
folds over the walk (count_model, weight_tensors) are held to the same numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ffn_cli.configs.families import model_spec_from_config
from ffn_cli.configs.files import load_preset
from ffn_cli.configs.source import config_model, preset_model
from ffn_cli.costs.weights import weight_tensors
from ffn_cli.models.count import count_model
from ffn_cli.models.layout import PlacedTensor, blocks, model_layout
from tests.model_configs import CASES, ENCODERS, WRAPPERS, small_config
from tests.test_models import PUBLISHED

CONFIGS = Path(__file__).parent / "data" / "configs"

# The reference configs and the totals their checkpoints publish (GPT2Model and BertModel with
# its pooler, as Hugging Face's own counts).
REFERENCE = {
    "gpt2": 124_439_808,
    "bert-base-uncased": 109_482_240,
    "llama-2-7b": 6_738_415_616,
    "mixtral-8x7b": 46_702_792_704,
}


def _walked(placed: tuple[PlacedTensor, ...]) -> int:
    return sum(t.params for t in placed)


@pytest.mark.parametrize(("name", "total"), sorted(REFERENCE.items()))
def test_the_walk_of_each_reference_config_is_its_published_total(name: str, total: int) -> None:
    assert _walked(model_layout(config_model(str(CONFIGS / f"{name}.json")))) == total


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_the_walk_of_each_preset_is_its_published_total_and_every_fold_agrees(name: str) -> None:
    spec = preset_model(name)
    walked = _walked(model_layout(spec))
    assert walked == PUBLISHED[name][0]
    assert count_model(spec).total_params == walked
    assert sum(t.params for t in weight_tensors(spec)) == walked


def test_mixtral_by_hand() -> None:
    """Mixtral-8x7B: 32 layers of 8 SwiGLU experts (14,336 wide) and a router of 8 rows, GQA
    attention with 8 KV heads of 128, an untied head, two RMSNorms a layer."""
    placed = model_layout(config_model(str(CONFIGS / "mixtral-8x7b.json")))
    layers = tuple(range(32))
    experts = [t for t in placed if t.name.startswith("experts.")]
    assert {(t.shape, t.copies, t.layers, t.role) for t in experts} == {
        ((14_336, 4_096), 8, layers, "experts"),
        ((4_096, 14_336), 8, layers, "experts"),
    }
    assert sum(t.params for t in experts) == 32 * 8 * 3 * 4_096 * 14_336
    (router,) = [t for t in placed if t.name.startswith("router.")]
    assert (router.shape, router.role, router.copies) == ((8, 4_096), "router", 1)
    k_proj = next(t for t in placed if t.name == "k_proj.weight")
    assert (k_proj.shape, k_proj.part, k_proj.layers) == ((8 * 128, 4_096), "attention", layers)
    head = next(t for t in placed if t.block == "LM head")
    assert (head.shape, head.tied, head.params) == ((32_000, 4_096), False, 32_000 * 4_096)
    norms = next(t for t in placed if t.block == "layer norms")
    assert norms.instances == 64 and norms.params == 64 * 4_096


def test_a_tied_head_is_placed_and_holds_nothing() -> None:
    placed = model_layout(config_model(str(CONFIGS / "gpt2.json")))
    head = next(t for t in placed if t.block == "LM head")
    embed = next(t for t in placed if t.block == "token embeddings")
    assert head.tied and head.shape == embed.shape and head.params == 0 and embed.params == 50_257 * 768


def test_a_block_is_a_row_of_the_parts_table() -> None:
    """Each row of count_model is one block of the walk, its parameters the block's."""
    for name in ("deepseek-v3", "gemma-3n-e2b", "nemotron-h-8b", "gemma-3-4b", "bert-base-uncased"):
        spec = preset_model(name)
        rows = blocks(model_layout(spec))
        parts = count_model(spec).parts
        assert [b.params for b in rows] == [p.params for p in parts]
        assert [b.part for b in rows] == [p.kind for p in parts]


# --- against transformers' own model, built on meta ---------------------------------------

# A family of each shape the walk places: dense, tied, MoE with shared experts and dense first
# layers, multi-head latent attention, biased experts, a vision tower, KV-shared layers and
# per-layer tensors, hybrid mixers, learned positions, an encoder with a pooler.
FAMILIES = [
    "llama",
    "qwen2_moe",
    "qwen3_moe",
    "deepseek_v3",
    "gpt_oss",
    "mixtral",
    "llama4_text",
    "gemma3",
    "gemma3n_text",
    "qwen3_next",
    "nemotron_h",
    "falcon",
    "gpt2",
    "bert",
]
META_CASES = [(t, keys) for t, keys in CASES if t in FAMILIES]


def _build(config: dict[str, Any]) -> Any:
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    if config["model_type"] in ENCODERS:
        auto = transformers.AutoModel
    elif config["model_type"] in WRAPPERS:
        auto = transformers.AutoModelForImageTextToText
    else:
        auto = transformers.AutoModelForCausalLM
    with torch.device("meta"):
        return auto.from_config(transformers.AutoConfig.for_model(**config))


def test_the_meta_cases_cover_the_families() -> None:
    assert {t for t, _keys in META_CASES} == set(FAMILIES)


@pytest.mark.parametrize(("model_type", "keys"), META_CASES, ids=[f"{t}-{i}" for i, (t, _k) in enumerate(META_CASES)])
def test_the_walk_is_what_transformers_builds(model_type: str, keys: dict[str, Any]) -> None:
    """The walk's parameters are the built model's; its routed experts (each in E copies) are
    the built experts modules'; its head is tied where the built head shares the embedding's."""
    config = small_config(model_type, keys)
    model = _build(config)
    spec = model_spec_from_config(config)
    placed = model_layout(spec)
    built = dict(model.named_parameters())
    assert _walked(placed) == sum(p.numel() for p in built.values())
    experts = [t for t in placed if t.name.startswith("experts.")]
    assert sum(t.params for t in experts) == sum(p.numel() for n, p in built.items() if ".experts." in n)
    if spec.moe_ffn is not None:
        assert {t.copies for t in experts} == {spec.moe_ffn.experts}
    head = [t for t in placed if t.block == "LM head" and t.name.endswith("weight")]
    out = model.get_output_embeddings()
    if head and out is not None:
        (one,) = head
        assert one.tied == (out.weight is model.get_input_embeddings().weight)


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-30b-a3b", "gpt-oss-20b"])
def test_full_size_presets_walk_to_transformers_totals(name: str) -> None:
    config = {k: v for k, v in load_preset(name).items() if not k.startswith("_")}
    model = _build(config)
    assert _walked(model_layout(model_spec_from_config(config))) == sum(p.numel() for p in model.parameters())
