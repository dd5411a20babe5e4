"""The family registry (ffn_cli/models/families): each model_type read by exactly one Family,
in the order `supported:` lists them, and each family's attention reach held against the
defaults of transformers' own config classes."""

from __future__ import annotations

import pytest

from ffn_cli.configs.families import FAMILIES, SUPPORTED_MODEL_TYPES, UnknownModelType, family_of, model_spec_from_config
from ffn_cli.configs.families.text import TEXT_FAMILIES
from tests.model_configs import CASES, ENCODERS, NOT_IN_TRANSFORMERS, WRAPPERS, small_config

_FAMILIES = {id(f): f for f in FAMILIES.values()}.values()


def test_each_model_type_is_read_by_one_family_and_listed_once() -> None:
    declared = [t for family in _FAMILIES for t in family.model_types]
    assert len(declared) == len(set(declared)) == len(SUPPORTED_MODEL_TYPES)
    assert set(declared) == set(SUPPORTED_MODEL_TYPES)
    assert all(t in family.model_types for t, family in FAMILIES.items())


def test_the_wrappers_are_the_families_a_text_config_cannot_name() -> None:
    assert set(FAMILIES) - set(TEXT_FAMILIES) == WRAPPERS


def test_a_nested_model_type_has_no_reader_but_its_text_familys_reach() -> None:
    for family in _FAMILIES:
        for outer in family.nested_in:
            assert outer not in FAMILIES
            assert family_of(outer) is family
            with pytest.raises(UnknownModelType):
                model_spec_from_config({"model_type": outer})


def test_only_the_encoders_attend_both_ways() -> None:
    assert {t for t, family in FAMILIES.items() if not family.reach.causal} == ENCODERS
    assert family_of("no_such_family") is None


transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("model_type", [t for t, f in FAMILIES.items() if f.reach.window or f.reach.chunk or f.reach.full_every])
def test_a_familys_window_chunk_and_period_are_its_config_classs(model_type: str) -> None:
    config = transformers.CONFIG_MAPPING[model_type]()
    text = config.get_text_config()
    reach = FAMILIES[model_type].reach
    assert reach.window == getattr(text, "sliding_window", None)
    assert reach.chunk == getattr(text, "attention_chunk_size", None)
    if reach.full_every is not None:  # the class's own layer_types: every full_every-th layer full
        types = text.layer_types
        assert types == ["full_attention" if (i + 1) % reach.full_every == 0 else "sliding_attention" for i in range(len(types))]


def _post_norm_only(model_type: str, keys: dict[str, object]) -> bool:
    """Whether transformers' built layers norm the sublayers' outputs and never their inputs."""
    torch = pytest.importorskip("torch")
    config = transformers.AutoConfig.for_model(**small_config(model_type, keys))
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(config)
    names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    return "post_feedforward_layernorm" in names and not names & {"input_layernorm", "pre_feedforward_layernorm"}


@pytest.mark.parametrize(("model_type", "keys"), [c for c in CASES if c[0] not in WRAPPERS | NOT_IN_TRANSFORMERS and c[0] in FAMILIES])
def test_the_post_norm_note_is_said_of_the_families_transformers_builds_post_norm(model_type: str, keys: dict[str, object]) -> None:
    said = "norms on the sublayer outputs (built pre-norm)" in FAMILIES[model_type].block_notes
    assert said == _post_norm_only(model_type, keys)
