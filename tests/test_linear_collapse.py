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
        "0, 2, 3: linear maps with nothing nonlinear between them, so together they are one linear map (16 → 16) of rank at most 8; "
        "the hidden widths add parameters and FLOPs, not capacity"
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
        "linear1, linear2: linear maps with nothing nonlinear between them, so together they are one linear map (64 → 64); "
        "the hidden width adds parameters and FLOPs, not capacity"
    ]
    zh = CliRunner().invoke(app, ["--lang", "zh", "trace", "--module", module, "--explain"], env={"COLUMNS": "80"})
    assert zh.exit_code == 0 and "合起来就是一个线性映射" in " ".join(zh.stdout.split())


class LoraLinear(nn.Module):
    """peft's LoRA `Linear` written out by hand: the frozen base layer plus B(A(dropout(x))),
    scaled by alpha / r; A narrows to the rank r, B widens back."""

    def __init__(self, d_in: int, d_out: int, r: int = 4, alpha: int = 8) -> None:
        super().__init__()
        self.base_layer = nn.Linear(d_in, d_out)
        self.lora_dropout = nn.Dropout(0.05)
        self.lora_A = nn.Linear(d_in, r, bias=False)
        self.lora_B = nn.Linear(r, d_out, bias=False)
        self.scaling = alpha / r

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base_layer(x) + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


class LoraFFN(nn.Module):
    def __init__(self, d: int = 32, f: int = 128, r: int = 4) -> None:
        super().__init__()
        self.up_proj, self.down_proj = LoraLinear(d, f, r), LoraLinear(f, d, r)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(torch.relu(self.up_proj(x)))


class Adapter(nn.Module):
    """A bottleneck adapter on a residual: x + up(down(x))."""

    def __init__(self, d: int = 32, r: int = 4) -> None:
        super().__init__()
        self.down, self.up = nn.Linear(d, r), nn.Linear(r, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.up(self.down(x))


@pytest.mark.parametrize("aten", [False, True])
@pytest.mark.parametrize("make", [LoraFFN, Adapter])
def test_a_low_rank_pair_added_to_a_full_rank_path_is_not_warned(make, aten: bool) -> None:
    result = trace_module(make(), aten=aten)
    assert result.warnings == ()
    # The pair is low rank indeed (rank 4 of 32): it is the sum beside it that keeps the map full rank.
    module = make()
    pair = module.up_proj if isinstance(module, LoraFFN) else module
    a, b = (pair.lora_A, pair.lora_B) if isinstance(module, LoraFFN) else (pair.down, pair.up)
    assert np.linalg.matrix_rank((b.weight.double() @ a.weight.double()).detach().numpy()) == 4


def test_the_same_low_rank_pair_alone_is_warned() -> None:
    module = nn.Sequential(nn.Linear(32, 4), nn.Linear(4, 32))
    (warning,) = trace_module(module).warnings
    assert str(warning).startswith("0, 1: linear maps with nothing nonlinear between them") and "of rank at most 4" in str(warning)


class EinsumFFN(nn.Module):
    """Weights as Parameters, each layer an einsum; `act` between them or nothing."""

    def __init__(self, act: bool, d: int = 16, f: int = 64) -> None:
        super().__init__()
        self.act = act
        self.w_in = nn.Parameter(torch.randn(d, f, generator=torch.Generator().manual_seed(2)) / 4)
        self.w_out = nn.Parameter(torch.randn(f, d, generator=torch.Generator().manual_seed(3)) / 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.einsum("btd,df->btf", x, self.w_in)
        return torch.einsum("btf,fd->btd", torch.relu(h) if self.act else h, self.w_out)


class SquareEinsum(nn.Module):
    """x·x contracted with a weight: quadratic in x, not linear (einsum of x with itself)."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sq = torch.einsum("btd,bte->btde", x, x)
        return torch.einsum("btde,de->bt", sq, self.w).unsqueeze(-1) * x


@pytest.mark.parametrize("aten", [False, True])
def test_einsum_layers_with_nothing_between_are_one_map(aten: bool) -> None:
    """Second path: the product of the two weight matrices computes the module's output."""
    module = EinsumFFN(act=False).double()
    (warning,) = trace_module(module, aten=aten).warnings
    assert "they are one linear map (16 → 16);" in str(warning) and "rank at most" not in str(warning)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    with torch.no_grad():
        np.testing.assert_allclose(module(x).numpy(), (x @ (module.w_in @ module.w_out)).numpy(), atol=1e-12)
    assert trace_module(EinsumFFN(act=True), aten=aten).warnings == ()
    assert trace_module(SquareEinsum(), aten=aten).warnings == ()
