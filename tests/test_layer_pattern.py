"""The compact layer pattern: hand cases, and any pattern read back gives the layers again."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ffn_cli.models.pattern import layer_pattern


def _expand(text: str) -> list[str]:
    """Read '3 × a + 1 × b, × 8, then 2 × a' back into its labels."""
    head, _, rest = text.partition(", then ")
    unit_text, _, times = head.partition(", × ")
    layers = [label for n, label in re.findall(r"(\d+) × ([^+]+?)(?: \+ |$)", unit_text) for _ in range(int(n))]
    layers *= int(times or 1)
    if rest:
        layers += [label for n, label in re.findall(r"(\d+) × ([^+]+?)(?: \+ |$)", rest) for _ in range(int(n))]
    return layers


@pytest.mark.parametrize(
    ("labels", "text"),
    [
        (["sliding", "sliding", "sliding", "full"] * 8, "3 × sliding + 1 × full, × 8"),
        ((["sliding"] * 5 + ["full"]) * 10 + ["sliding"] * 2, "5 × sliding + 1 × full, × 10, then 2 × sliding"),
        (["full"] * 32, "32 × full"),
        (["DeltaNet"] * 3 + ["attention"], "3 × DeltaNet + 1 × attention"),
        (["conv", "attention", "conv"], "1 × conv + 1 × attention + 1 × conv"),
    ],
)
def test_hand_cases(labels: list[str], text: str) -> None:
    assert layer_pattern(labels) == text


@given(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=60))
def test_a_repeating_pattern_reads_back_as_its_layers(labels: list[str]) -> None:
    text = layer_pattern(labels)
    expanded = _expand(text)
    if ", × " in text or ", then " in text:
        assert expanded == labels
    else:  # one run of runs, or the counts of each kind
        assert sorted(expanded) == sorted(labels)
