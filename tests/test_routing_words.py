"""The routing rules a family reads (sigmoid scores, bias correction, grouped top-k, a weight
scale) are one Message: the English `--json` carries, and the reader's language when shown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ffn_cli.configs.families import model_spec_from_config
from ffn_cli.i18n import Message, set_language
from tests.model_configs import small_config

_MLA = {"kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 12, "v_head_dim": 10, "moe_intermediate_size": 24}
_V3 = {**_MLA, "n_routed_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "q_lora_rank": 20}


@pytest.fixture
def english() -> Iterator[None]:
    yield
    set_language("en")


def _routing(model_type: str, keys: dict[str, object]) -> str:
    return model_spec_from_config(small_config(model_type, keys)).routing


def test_deepseek_v3_rules_read_as_before(english: None) -> None:
    routing = _routing("deepseek_v3", {**_V3, "n_group": 4, "topk_group": 2, "routed_scaling_factor": 2.5})
    # Written by hand from DeepseekV3TopkRouter: sigmoid, bias-corrected choice, 2 of 4 groups, × 2.5.
    assert routing == "sigmoid scores, chosen with a bias correction, grouped: top-2 of 4 groups, weights × 2.5"
    assert isinstance(routing, Message)
    set_language("zh")
    assert routing.shown() == "sigmoid 打分，按偏置修正后的分数选择，分组：4 组中取 top-2，权重 × 2.5"


def test_no_rule_is_no_words() -> None:
    # DeepSeek-V2 without groups or a scale scores by softmax, as the built mixture does: nothing to say.
    keys = {**_MLA, "n_routed_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 1}
    assert _routing("deepseek_v2", keys) == ""


def test_one_group_is_no_grouping() -> None:
    routing = _routing("deepseek_v3", {**_V3, "n_group": 1, "topk_group": 1})
    assert routing == "sigmoid scores, chosen with a bias correction"
