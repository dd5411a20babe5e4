"""FFNs written as courses and codebases write them, traced whole: lazy layers (d2l), a
parameter nothing reads. Parameters are held to `p.numel()` of the module, FLOPs to
FlopCounterMode, and the steps table's total to the footer's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.errors import FFNError
from ffn_cli.trace.any_module import trace_module


class PositionWiseFFN(nn.Module):
    """d2l's position-wise FFN: lazy linears, sized at their first call."""

    def __init__(self, hidden: int, outputs: int) -> None:
        super().__init__()
        self.dense1, self.relu, self.dense2 = nn.LazyLinear(hidden), nn.ReLU(), nn.LazyLinear(outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dense2(self.relu(self.dense1(x)))


class Unread(nn.Module):
    """A parameter registered and never used: the module's total holds it, no op reads it."""

    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(8, 32), nn.Linear(32, 8)
        self.unused = nn.Parameter(torch.zeros(128))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


def _matmul_flops(module: nn.Module, x: torch.Tensor) -> int:
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        module(x)
    return counter.get_total_flops()


def test_a_lazy_module_is_materialised_at_the_width_it_returns() -> None:
    module = PositionWiseFFN(32, 8)
    result = trace_module(module)
    assert result.module.d_model == 8 and result.input_shape == (2, 5, 8)
    assert result.total_params == sum(p.numel() for p in module.parameters()) == 8 * 32 + 32 + 32 * 8 + 8
    assert result.matmul_flops == _matmul_flops(module, torch.zeros(2, 5, 8))


def test_a_lazy_module_takes_the_width_given() -> None:
    module = PositionWiseFFN(32, 8)
    result = trace_module(module, d_model=16, d_model_from="--d-model")
    assert module.dense1.weight.shape == (32, 16)
    assert result.total_params == sum(p.numel() for p in module.parameters()) == 16 * 32 + 32 + 32 * 8 + 8
    assert result.matmul_flops == _matmul_flops(module, torch.zeros(2, 5, 16))


def test_a_lazy_module_draws_its_weights_from_the_seed() -> None:
    first, second = PositionWiseFFN(32, 8), PositionWiseFFN(32, 8)
    trace_module(first, seed=3)
    trace_module(second, seed=3)
    assert torch.equal(first.dense1.weight, second.dense1.weight)


def test_a_lazy_module_with_no_linear_asks_for_the_width() -> None:
    class LazyNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.parameter.UninitializedParameter()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    try:
        trace_module(LazyNorm())
    except FFNError as exc:
        assert exc.option == "d_model" and "give --d-model" in exc.allowed
    else:
        raise AssertionError("a lazy module with no width to read was traced")


UNREAD_FILE = """
import pytest
import torch
from torch import nn


class Unread(nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(8, 32), nn.Linear(32, 8)
        self.unused = nn.Parameter(torch.zeros(128))

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))
"""


def test_one_parameter_total_everywhere(tmp_path: Path) -> None:
    (tmp_path / "unread_ffn.py").write_text(UNREAD_FILE)
    named = f"{tmp_path / 'unread_ffn.py'}:Unread"
    module = Unread()
    result = trace_module(module)
    assert result.total_params == sum(p.numel() for p in module.parameters()) == 680
    assert [(p.name, p.shape) for p in result.unread_params] == [("unused", (128,))]
    run = CliRunner().invoke(app, ["trace", "--module", named], env={"COLUMNS": "80"})
    assert run.exit_code == 0, run.output
    total_row = next(line for line in run.stdout.splitlines() if line.strip().startswith("total"))
    assert re.findall(r"[\d,]+", total_row)[0] == "680"  # the steps table's total is the footer's
    assert "not read  no op read it" in run.stdout and "680 = unused 128 + up 288 + down 264; 128 of them no op read" in run.stdout
    data = json.loads(CliRunner().invoke(app, ["trace", "--module", named, "--json"]).stdout)
    assert data["total_params"] == 680 and data["unread_params"] == {"unused": [128]}


class BiasGeLU(torch.autograd.Function):
    """Megatron's fused bias-GeLU, forward and backward written by hand (tanh approximation)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, bias)
        y = x + bias
        return y * 0.5 * (1.0 + torch.tanh(0.79788456 * y * (1 + 0.044715 * y * y)))

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, bias = ctx.saved_tensors
        y = x + bias
        t = torch.tanh(0.79788456 * y * (1 + 0.044715 * y * y))
        slope = 0.5 * y * ((1 - t * t) * (0.79788456 + 0.1070322243 * y * y)) + 0.5 * (1 + t)
        return slope * g, (slope * g).sum(dim=tuple(range(g.dim() - 1)))


class MegatronMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 64, bias=False)
        self.bias = nn.Parameter(torch.randn(64) * 0.1)
        self.fc2 = nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(BiasGeLU.apply(self.fc1(x), self.bias))


def test_a_custom_autograd_function_runs_backward_with_what_it_saved() -> None:
    torch.manual_seed(0)
    module = MegatronMLP().double()
    x = torch.randn(2, 5, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    result = trace_module(module, x, backward=True, loss="sum")
    assert result.backward is not None
    # The second path: autograd run here on the same input, dL/dy = 1 (loss "sum").
    module.zero_grad()
    module(x).sum().backward()
    by_name = {name: p.grad.norm().item() for name, p in module.named_parameters()}
    traced = {p.name: p.norm for p in result.backward.params}
    assert traced == pytest.approx(by_name, rel=1e-12)
    # What the Function saved (x and the bias; the bias is a parameter, not counted) is read.
    saved = {r.shape for reads in (s.reads for s in result.backward.steps) for r in reads}
    assert (2, 5, 64) in saved
