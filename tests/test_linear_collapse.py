"""Two linear maps with nothing nonlinear between them are one linear map: the trace says so.

Held to a second path: the product of the module's own weight matrices, whose rank NumPy
computes, and the module's output equal to that one matrix applied to the input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.tracing.any_module import trace_module
from tests.data import articles, module_styles

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"


def _collapsed(module: nn.Sequential) -> np.ndarray:
    """The one affine map the chain computes: W = Wₙ…W₁ (biases folded into an extra column)."""
    out = np.eye(module[0].in_features + 1)
    for layer in module:
        if isinstance(layer, nn.Linear):
            w = np.zeros((layer.out_features + 1, layer.in_features + 1))
            w[:-1, :-1] = layer.weight.detach().double().numpy()
            w[:-1, -1] = layer.bias.detach().double().numpy()
            w[-1, -1] = 1
            out = w @ out
    return out


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_linears_with_only_dropout_between_are_one_map(mode: str) -> None:
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(16, 8), nn.Dropout(0.0), nn.Linear(8, 64), nn.Linear(64, 16)).double()
    result = trace_module(module, mode=mode)
    assert [str(w) for w in result.warnings] == [
        "0, 2, 3: linear maps with nothing nonlinear between them, so together one linear map (16 → 16) of rank at most 8; "
        "the hidden width adds parameters and FLOPs, not capacity"
    ]
    # The second path: one matrix computes the module's output, and its rank is what is said.
    w = _collapsed(module)
    x = torch.randn(3, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        y = module.eval()(x).numpy()
    np.testing.assert_allclose((w[:-1, :-1] @ x.numpy().T).T + w[:-1, -1], y, atol=1e-12)
    assert np.linalg.matrix_rank(w[:-1, :-1]) == 8


@pytest.mark.parametrize(
    "make",
    [lambda: articles.TransformerFFN(16, 64), lambda: articles.GLUFFN(16, 32), module_styles.FusedSwiGLU, module_styles.GPT2MLP],
)
def test_an_ffn_with_its_activation_gets_no_warning(make) -> None:
    assert trace_module(make()).warnings == ()


def test_the_articles_memory_efficient_ffn_is_warned_in_text_and_json() -> None:
    module = f"{EXAMPLES / 'article_002.py'}:MemoryEfficientFFN(64, 256)"
    data = json.loads(CliRunner().invoke(app, ["trace", "--module", module, "--json"]).stdout)
    assert data["warnings"] == [
        "linear1, linear2: linear maps with nothing nonlinear between them, so together one linear map (64 → 64) of rank at most 64; "
        "the hidden width adds parameters and FLOPs, not capacity"
    ]
    zh = CliRunner().invoke(app, ["--lang", "zh", "trace", "--module", module, "--explain"], env={"COLUMNS": "80"})
    assert zh.exit_code == 0 and "合起来就是一个线性映射" in " ".join(zh.stdout.split())
