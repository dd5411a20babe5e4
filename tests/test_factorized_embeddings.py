"""Factorized embeddings laid out from transformers' own modules (configs/layer_read/shell.py):
ELECTRA's token table of embedding_size columns, its positions, token types and their norm as
wide, projected to hidden_size beside the layers, and a generator head tied to the table;
RemBERT's table of input_embedding_size and its untied head of output_embedding_size. Each held
to transformers' model: its parameters on meta, its Linear FLOPs under FlopCounterMode, and the
bytes of the weights a GPU holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from ffn_cli.configs.layer_read import read_layout  # noqa: E402
from ffn_cli.models.count import count_model  # noqa: E402
from tests.helpers import cli_json  # noqa: E402

_SMALL = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, vocab_size=100,
              max_position_embeddings=64, is_decoder=True)  # fmt: skip
CASES = {
    # (model_type, its keys): the table's width, the width the head reads, whether the head is tied
    "electra": ({"embedding_size": 32}, 32, 32, True),
    "rembert": ({"input_embedding_size": 16, "output_embedding_size": 48}, 16, 48, False),
}


def _config(model_type: str, keys: dict[str, Any]) -> dict[str, Any]:
    return {**transformers.AutoConfig.for_model(model_type, **_SMALL, **keys).to_dict(), "model_type": model_type}


def _built(config: dict[str, Any]) -> Any:
    built = transformers.AutoConfig.for_model(**config)
    return transformers.AutoModelForCausalLM.from_config(built).eval().requires_grad_(False)


@pytest.mark.parametrize("model_type", sorted(CASES))
def test_the_tables_and_the_head_as_transformers_builds_them(model_type: str) -> None:
    keys, table, head, tied = CASES[model_type]
    config = _config(model_type, keys)
    spec = read_layout(config, name=model_type, source=model_type).spec
    model = _built(config)
    assert count_model(spec).total_params == sum(p.numel() for p in model.parameters())
    assert spec.embedding_width == table and spec.head_width == head and spec.tie_word_embeddings is tied
    assert tuple(model.get_input_embeddings().weight.shape) == (100, table)
    assert model.get_output_embeddings().in_features == head
    parts = {p.name: p for p in count_model(spec).parts}
    assert parts["token embeddings"].params_each == 100 * table
    assert parts["position embeddings"].params_each == 64 * table
    assert parts["embedding norm"].params_each == 2 * table  # a LayerNorm over the table's width


@pytest.mark.parametrize("model_type", sorted(CASES))
def test_a_tokens_matmul_flops_are_the_linears_transformers_runs(model_type: str) -> None:
    # One token through the causal LM: every Linear's FLOPs under FlopCounterMode, the projection up
    # from the table, the head's transform and the head among them (at one key, no score is a matmul).
    from torch.utils.flop_counter import FlopCounterMode

    keys, *_ = CASES[model_type]
    config = _config(model_type, keys)
    spec = read_layout(config, name=model_type, source=model_type).spec
    model = _built(config)
    linears = {f"{type(model).__name__}.{n}" for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(torch.tensor([[5]]))
    counted = sum(sum(c.values()) for name, c in counter.get_flop_counts().items() if name in linears)
    assert count_model(spec).matmul_flops_per_token == counted


def test_a_gpu_holds_every_weight_of_electras_default(tmp_path: Path) -> None:
    # transformers' default ELECTRA (hidden 256, tables of 128), bf16 on one GPU: 2 B a parameter.
    config = {**transformers.AutoConfig.for_model("electra", is_decoder=True).to_dict(), "model_type": "electra"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    data = cli_json("params", "--config", str(path), "--gpu", "h100", "--phase", "decode", "--no-cache")
    built = sum(p.numel() for p in _built(config).parameters())
    assert data["total_params"] == built
    assert data["per_gpu_memory"]["per_gpu_bytes"] == 2 * built
    head = next(p for p in data["parts"] if p["name"] == "LM head")
    assert "tied to the token embeddings" in head["detail"]
