from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ffn_cli.errors import FFNError
from ffn_cli.spec import FFNSpec, llama_hidden_dim
from ffn_cli.variants import VARIANTS


def test_dense_default_is_four_times_d_model() -> None:
    assert FFNSpec(variant="relu", d_model=512).d_ff == 2048


def test_llama_rule_matches_published_widths() -> None:
    assert FFNSpec(variant="swiglu", d_model=4096).d_ff == 11008  # LLaMA-2-7B
    assert FFNSpec(variant="swiglu", d_model=4096, ffn_dim_multiplier=1.3, multiple_of=1024).d_ff == 14336  # Llama-3-8B
    assert FFNSpec(variant="swiglu", d_model=8192, ffn_dim_multiplier=1.3, multiple_of=4096).d_ff == 28672  # LLaMA-2-70B


@given(d=st.integers(1, 20000), multiple=st.integers(1, 4096))
def test_llama_rule_rounds_up_to_the_multiple(d: int, multiple: int) -> None:
    hidden = llama_hidden_dim(d, multiple)
    assert hidden % multiple == 0
    assert int(8 * d / 3) <= hidden < int(8 * d / 3) + multiple


def test_explicit_d_ff_is_kept_and_bias_follows_the_variant() -> None:
    assert FFNSpec(variant="swiglu", d_model=64, d_ff=100).d_ff == 100
    for name, variant in VARIANTS.items():
        assert FFNSpec(variant=name, d_model=8).bias is variant.default_bias


def test_moe_expert_width_follows_the_expert_variant() -> None:
    assert FFNSpec(variant="moe", d_model=4096).d_ff == 11008
    assert FFNSpec(variant="moe", d_model=512, expert_variant="relu").d_ff == 2048


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"variant": "nope"}, "variant"),
        ({"d_model": 0}, "d_model"),
        ({"d_model": -8}, "d_model"),
        ({"d_model": 2.5}, "d_model"),
        ({"d_model": True}, "d_model"),
        ({"d_model": 1 << 40}, "d_model"),
        ({"d_ff": 0}, "d_ff"),
        ({"dropout": 1.0}, "dropout"),
        ({"dropout": -0.1}, "dropout"),
        ({"variant": "sparse", "sparsity": 1.0}, "sparsity"),
        ({"multiple_of": 0}, "multiple_of"),
        ({"init": "orthogonal"}, "init"),
        ({"variant": "relu", "fused_gate_up": True}, "fused_gate_up"),
        ({"variant": "moe", "experts": 4, "top_k": 5}, "top_k"),
        ({"variant": "moe", "expert_variant": "moe"}, "expert_variant"),
        ({"variant": "moe", "capacity_factor": 0.0}, "capacity_factor"),
        ({"ffn_dim_multiplier": -1.0}, "ffn_dim_multiplier"),
    ],
)
def test_invalid_fields_name_the_option_value_and_what_is_allowed(kwargs: dict[str, object], option: str) -> None:
    with pytest.raises(FFNError) as info:
        FFNSpec(**kwargs)  # type: ignore[arg-type]
    assert info.value.option == option
    message = str(info.value)
    assert message.startswith(f"{option}=") and "invalid" in message and "\n" not in message


def test_spec_is_frozen() -> None:
    spec = FFNSpec()
    with pytest.raises(AttributeError):
        spec.d_model = 3  # type: ignore[misc]
