"""What counts as a number in a value ffn did not make: one rule for a profile's JSON, the Python
API's arguments and --rank-timeout alike."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ffn_cli.api_arguments import fits
from ffn_cli.benchmark.config import BenchConfig
from ffn_cli.errors import FFNError
from ffn_cli.hardware.profile_check import DamagedProfile, check_profile_data
from ffn_cli.requests.parallel import check_rank_timeout
from ffn_cli.spec import FFNSpec
from ffn_cli.values import is_finite_number
from tests.test_profile_damaged import GOOD

NOT_NUMBERS = [True, False, math.nan, math.inf, -math.inf, "1", None, [1], Fraction(1, 2), 1j]


@given(st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)))
def test_every_finite_int_or_float_is_a_number(value: float) -> None:
    assert is_finite_number(value)


@pytest.mark.parametrize("value", NOT_NUMBERS, ids=repr)
def test_a_bool_a_non_finite_float_and_other_types_are_not(value: object) -> None:
    assert not is_finite_number(value)


@pytest.mark.parametrize("value", NOT_NUMBERS, ids=repr)
def test_each_reader_of_a_number_refuses_the_same_values(value: object) -> None:
    assert check_profile_data({**GOOD, "copy_gbps": 2})["copy_gbps"] == 2.0  # the good profile passes
    assert not fits(value, float)
    with pytest.raises(DamagedProfile, match="copy_gbps"):
        check_profile_data({**GOOD, "copy_gbps": value})
    if value is None:  # None is --rank-timeout's and ffn_dim_multiplier's own default
        return
    with pytest.raises(FFNError, match="rank_timeout"):
        check_rank_timeout(value)  # type: ignore[arg-type]
    for make, field in [(FFNSpec, "ffn_dim_multiplier"), (FFNSpec, "dropout"), (BenchConfig, "warmup_ms"), (BenchConfig, "min_time_ms")]:
        make(**{field: 0.5})  # a number in range passes
        with pytest.raises(FFNError):
            make(**{field: value})
