"""FFNs written as courses and codebases write them, traced whole: lazy layers (d2l), a
parameter nothing reads. Parameters are held to `p.numel()` of the module, FLOPs to
FlopCounterMode, and the steps table's total to the footer's."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.tracing.any_module import infer_d_model, trace_module


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
    # Its hand-written backward is a step of its own: it makes the bias gradient and reads what
    # the Function saved (x, fc1's output; the bias is a parameter, so a weight, not kept).
    (own,) = [s for s in result.backward.steps if s.of == "BiasGeLU"]
    assert [p.name for p in own.weight_grads] == ["bias"]
    assert [(r.saved_by, r.shape) for r in own.reads] == [("fc1", (2, 5, 64))]
    # fc2's weight gradient reads the Function's output; fc1's reads x: each step only its own.
    reads = {s.of: [(r.saved_by, r.shape) for r in s.reads] for s in result.backward.steps}
    assert reads["fc2"] == [("BiasGeLU", (10, 64))] and reads["fc1"] == [("input", (10, 16))]


class T5DenseReluDense(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wi, self.wo, self.dropout, self.act = nn.Linear(16, 64, bias=False), nn.Linear(64, 16, bias=False), nn.Dropout(0.1), nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.wo(self.dropout(self.act(self.wi(x))))


class T5LayerFF(nn.Module):
    """T5's layer: a norm, the FFN in a submodule, dropout, and the residual."""

    def __init__(self) -> None:
        super().__init__()
        self.DenseReluDense, self.layer_norm, self.dropout = T5DenseReluDense(), nn.LayerNorm(16), nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.dropout(self.DenseReluDense(self.layer_norm(x)))


def _sequential_in_sequential() -> nn.Module:
    """x-transformers' FeedForward: (Linear, GELU) as a block of its own, dropout, the out projection."""
    return nn.Sequential(nn.Sequential(nn.Linear(16, 64), nn.GELU()), nn.Dropout(0.0), nn.Linear(64, 16))


def test_the_default_depth_opens_wrappers_to_the_layers() -> None:
    xt = trace_module(_sequential_in_sequential())
    assert [s.name for s in xt.steps] == ["0.0", "0.1", "1", "2"] and xt.module.opened == ("0",)
    t5 = trace_module(T5LayerFF())
    assert [s.name for s in t5.steps if s.module_class] == [
        "layer_norm",
        "DenseReluDense.wi",
        "DenseReluDense.act",
        "DenseReluDense.dropout",
        "DenseReluDense.wo",
        "dropout",
    ]
    assert t5.module.opened == ("DenseReluDense",)
    compiled = trace_module(torch.compile(_sequential_in_sequential()))
    assert [s.name for s in compiled.steps] == ["_orig_mod.0.0", "_orig_mod.0.1", "_orig_mod.1", "_orig_mod.2"]
    assert compiled.module.opened == ("_orig_mod",)
    # --depth still decides when given; the counts are the module's whatever the depth.
    shallow = trace_module(T5LayerFF(), depth=1)
    assert [s.name for s in shallow.steps if s.module_class] == ["layer_norm", "DenseReluDense", "dropout"]
    assert shallow.total_params == t5.total_params == sum(p.numel() for p in T5LayerFF().parameters())
    assert shallow.matmul_flops == t5.matmul_flops == _matmul_flops(T5LayerFF(), torch.zeros(2, 5, 16))


def gelu_accurate(x: torch.Tensor) -> torch.Tensor:
    """fairseq's gelu_accurate: a plain function called from forward, eight torch calls."""
    return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * torch.pow(x, 3))))


class FairseqFFN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 64), nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(gelu_accurate(self.fc1(x)))


def test_a_plain_function_called_in_forward_is_one_step_named_after_it() -> None:
    module = FairseqFFN()
    result = trace_module(module)
    assert [s.name for s in result.steps] == ["fc1", "gelu_accurate", "fc2"]
    gelu = result.steps[1]
    assert gelu.input_shapes == ((2, 5, 64),) and gelu.output_shape == (2, 5, 64)
    assert result.matmul_flops == _matmul_flops(module, torch.zeros(2, 5, 16))
    # Called twice, it is two steps: one per invocation.
    assert [s.name for s in trace_module(Twice(), d_model=8).steps] == ["gelu_accurate", "gelu_accurate#2"]


@torch.jit.script
def scripted_bias_gelu(bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


class ScriptedMLP(nn.Module):
    """Megatron's jit-scripted bias-GeLU: its ops run in TorchScript, with no Python call around them."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.bias, self.fc2 = nn.Linear(16, 64, bias=False), nn.Parameter(torch.zeros(64)), nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(scripted_bias_gelu(self.bias, self.fc1(x)))

    def twice(self, x: torch.Tensor) -> torch.Tensor:
        return scripted_bias_gelu(self.bias, self.fc1(x)) + scripted_bias_gelu(self.bias, self.fc1(x))


@pytest.mark.parametrize("aten", [True, False])
def test_a_jit_scripted_function_called_in_forward_is_one_step_named_after_it(aten: bool) -> None:
    module = ScriptedMLP()
    result = trace_module(module, aten=aten)
    assert [s.name for s in result.steps] == ["fc1", "scripted_bias_gelu", "fc2"]
    gelu = result.steps[1]
    assert gelu.op == "scripted_bias_gelu(…)" and [p.name for p in gelu.params] == ["bias"]
    # By hand: 3 adds, 6 multiplies and a tanh per element, over (2, 5, 64).
    assert gelu.elementwise_flops == 10 * 2 * 5 * 64 and gelu.matmul_flops == 0
    assert result.matmul_flops == _matmul_flops(module, torch.zeros(2, 5, 16))


def test_a_jit_scripted_function_called_twice_is_two_steps() -> None:
    module = ScriptedMLP()
    module.forward = module.twice  # type: ignore[method-assign]
    names = [s.name for s in trace_module(module, d_model=16).steps]
    assert names.count("scripted_bias_gelu") == 1 and names.count("scripted_bias_gelu#2") == 1


def test_a_plain_function_is_one_backward_step_with_its_own_gradient_sums() -> None:
    """gelu_accurate reads x twice (0.5·x and the tanh's argument): autograd adds the two
    gradients between nodes, and that sum is the function's, not a step of its own."""
    module = FairseqFFN()
    result = trace_module(module, backward=True)
    assert result.backward is not None
    assert [s.of for s in result.backward.steps] == ["fc2", "gelu_accurate", "fc1"]
    x = torch.randn(2, 5, 16, requires_grad=True)
    out = module(x)
    with FlopCounterMode(display=False) as counter:
        out.backward(torch.ones_like(out))
    assert sum(s.matmul_flops for s in result.backward.steps) == counter.get_total_flops()


class Twice(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gelu_accurate(gelu_accurate(x))


class MegatronLinear(nn.Module):
    """Megatron's linears return (output, bias), the bias added later (fused with the activation)."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.randn(n_out, n_in) * 0.1), nn.Parameter(torch.randn(n_out) * 0.1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.nn.functional.linear(x, self.weight), self.bias


class TupleMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dense_h_to_4h, self.dense_4h_to_h = MegatronLinear(16, 64), MegatronLinear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, bias = self.dense_h_to_4h(x)
        out, bias2 = self.dense_4h_to_h(torch.nn.functional.gelu(h + bias))
        return out + bias2


def test_a_tuple_output_shows_the_tensor_that_flows_on() -> None:
    module = TupleMLP()
    result = trace_module(module)
    linear = next(s for s in result.steps if s.name == "dense_h_to_4h")
    assert linear.output_shape == (2, 5, 64) and linear.stats is not None
    # The statistics are the output's own: held to the tensor computed here on the same input.
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(0))
    traced = trace_module(module, x)
    with torch.no_grad():
        h = torch.nn.functional.linear(x, module.dense_h_to_4h.weight)
    stats = next(s for s in traced.steps if s.name == "dense_h_to_4h").stats
    assert stats is not None and stats.mean == pytest.approx(float(h.double().mean()), rel=1e-6)
    assert result.total_params == sum(p.numel() for p in module.parameters())


class SwitchGate(nn.Module):
    """A Switch-style router returning (l_aux, combine weights, dispatch mask)."""

    def __init__(self, d_model: int = 16, experts: int = 4) -> None:
        super().__init__()
        self.wg = nn.Linear(d_model, experts, bias=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        probs = self.wg(x).softmax(-1)
        return (probs.mean(0) ** 2).sum(), probs, probs > 0.25


class ReturnsBias(nn.Module):
    """The whole layer returns Megatron's (output, bias): the caller adds the bias."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = MegatronLinear(16, 64), MegatronLinear(64, 16)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, bias = self.fc1(x)
        return self.fc2(torch.nn.functional.gelu(h + bias))


class ReturnsDict(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(16, 64), nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = torch.relu(self.up(x))
        return {"aux_loss": h.pow(2).mean(), "hidden_states": self.down(h)}


@dataclasses.dataclass
class FFNOutput:
    aux_loss: torch.Tensor
    hidden_states: torch.Tensor


class ReturnsDataclass(ReturnsDict):
    def forward(self, x: torch.Tensor) -> FFNOutput:  # type: ignore[override]
        h = torch.relu(self.up(x))
        return FFNOutput(h.pow(2).mean(), self.down(h))


class Pair(NamedTuple):
    hidden_states: torch.Tensor
    router_logits: torch.Tensor


class ReturnsNamedTuple(ReturnsDict):
    def forward(self, x: torch.Tensor) -> Pair:  # type: ignore[override]
        h = torch.relu(self.up(x))
        return Pair(self.down(h), h[..., :4])


@pytest.mark.parametrize(
    ("module", "member", "shape", "others"),
    [
        (ReturnsDataclass(), ".hidden_states", (2, 5, 16), [(".aux_loss", (), "float32")]),
        (ReturnsNamedTuple(), "[0]", (2, 5, 16), [("[1]", (2, 5, 4), "float32")]),
        (ReturnsBias(), "[0]", (2, 5, 16), [("[1]", (16,), "float32")]),
        (SwitchGate(), "[1]", (2, 5, 4), [("[0]", (), "float32"), ("[2]", (2, 5, 4), "bool")]),
        (ReturnsDict(), "['hidden_states']", (2, 5, 16), [("['aux_loss']", (), "float32")]),
    ],
)
def test_a_tuple_or_dict_output_follows_the_flowing_tensor_and_lists_the_others(
    module: nn.Module, member: str, shape: tuple[int, ...], others: list[tuple[str, tuple[int, ...], str]]
) -> None:
    result = trace_module(module, d_model=16)
    x = torch.zeros(2, 5, 16)
    out = module(x)  # the module's own output, outside the trace: where each tensor sits
    picked = eval("out" + member, {"out": out})
    assert result.output_member == member and result.output_shape == tuple(picked.shape) == shape
    listed = [(m.where, m.shape, m.dtype) for m in result.other_outputs]
    assert listed == others
    for where, got, dtype in listed:
        tensor = eval("out" + where, {"out": out})
        assert tuple(tensor.shape) == got and str(tensor.dtype).removeprefix("torch.") == dtype


def test_the_other_outputs_are_in_the_footer_and_the_json() -> None:
    import io

    from rich.console import Console

    from ffn_cli.render.trace import trace_data, trace_view

    result = trace_module(SwitchGate(), d_model=16)
    data = trace_data(result)
    assert data["output_member"] == "[1]"
    assert data["other_outputs"] == [
        {"member": "[0]", "shape": [], "dtype": "float32"},
        {"member": "[2]", "shape": [2, 5, 4], "dtype": "bool"},
    ]
    console = Console(width=120, file=io.StringIO(), color_system=None)
    console.print(trace_view(result))
    assert "output[1] (2, 5, 4) is followed; also returned: [0] () float32; [2] (2, 5, 4) bool" in console.file.getvalue()
    plain = trace_data(trace_module(TupleMLP()))  # a tensor returned: nothing to list
    assert "other_outputs" not in plain and "output_member" not in plain


def test_a_dataclass_output_runs_backward_and_no_tensor_at_all_is_said_plainly() -> None:
    result = trace_module(ReturnsDataclass(), d_model=16, backward=True)
    assert result.backward is not None and result.output_member == ".hidden_states"
    assert {p.name: p for p in result.backward.params}["down.weight"].stats is not None

    class ReturnsNothing(ReturnsDict):
        def forward(self, x: torch.Tensor) -> None:  # type: ignore[override]
            self.up(x)

    with pytest.raises(FFNRuntimeError) as failed:
        trace_module(ReturnsNothing(), d_model=16)
    assert str(failed.value) == (
        "the forward returned NoneType with no tensor in it: ffn traces a tensor, or a tuple, list, dict or dataclass of them"
    )


def test_a_tuple_output_runs_backward_from_the_flowing_tensor() -> None:
    result = trace_module(ReturnsBias(), d_model=16, backward=True)
    assert result.backward is not None and result.output_member == "[0]"
    grads = {p.name: p for p in result.backward.params}
    assert grads["fc1.weight"].stats is not None  # dL/dW from the followed output


class RaisesItself(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(8, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("my own mistake")


class WrongWidth(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(8, 32), nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.up(x))  # 32 features into a layer that takes 16


class RawMatrix(nn.Module):
    """No linear, no norm: its input width is found by trying each width of its matrix."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w


def test_a_width_is_found_by_trying_the_module() -> None:
    assert infer_d_model(RawMatrix()) == (8, "w (8, 32), dim 0")


def test_ffns_own_failure_while_trying_a_width_is_not_the_modules_no(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault in ffn's own probe is raised, never read as `neither width runs the module`."""
    import functools

    import ffn_cli.tracing.any_module as any_module

    monkeypatch.setattr(any_module, "users_call", functools.partial(int, "a fault of ffn's"))  # raises in ffn's own frame
    with pytest.raises(TypeError):
        infer_d_model(RawMatrix())


@pytest.mark.parametrize("where", ["tensor_stats", "elementwise_flops"])  # before the forward, and inside it at each op
def test_ffns_own_failure_is_said_to_be_ffns(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """A fault raised in ffn's recorder while the user's forward runs is ffn's: never
    `forward raised`, always the --debug hint."""
    import functools

    import ffn_cli.tracing.recorder as recorder

    monkeypatch.setattr(recorder, where, functools.partial(int, "a fault of ffn's"))  # raises inside ffn's own frame
    with pytest.raises(Exception) as failed:
        trace_module(Unread())
    text = str(failed.value)
    assert text.startswith("ffn itself failed while running Unread") and ", not your code: TypeError:" in text, text
    assert "forward raised" not in text and "run `ffn --debug …` for the traceback" in text


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (RaisesItself, "RaisesItself.forward raised in its own code: ValueError: my own mistake"),
        (WrongWidth, "WrongWidth.forward raised in step down (Linear) at `F.linear(x, down.weight, down.bias)`: RuntimeError: mat1"),
    ],
)
def test_the_users_own_failure_is_still_the_users(make, said: str) -> None:
    with pytest.raises(Exception) as failed:
        trace_module(make(), d_model=8)
    assert str(failed.value).startswith(said), str(failed.value)
    assert "ffn itself" not in str(failed.value)


class ConvFFN(nn.Module):
    """A convolution over the tokens between up and down (ConvNeXt's, MobileViT's depthwise one
    when groups = channels)."""

    def __init__(self, d: int = 64, f: int = 384, k: int = 3, groups: int = 384) -> None:
        super().__init__()
        self.up = nn.Linear(d, f)
        self.dwconv = nn.Conv1d(f, f, k, padding=k // 2, groups=groups)
        self.down = nn.Linear(f, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(x).transpose(1, 2)  # (B, f, T): channels first, as Conv1d takes them
        return self.down(torch.nn.functional.gelu(self.dwconv(h)).transpose(1, 2))


def _conv_backward_step(result: Any) -> Any:
    assert result.backward is not None
    return next(s for s in result.backward.steps if s.of == "dwconv")


def test_a_depthwise_convolutions_backward_is_counted_per_group() -> None:
    """By hand: each of the 384 channels slides its own 3 weights over 5 positions, for 2
    sequences; each multiply-add of the forward (2 FLOPs) has one in dW and one in dx."""
    result = trace_module(ConvFFN(), backward=True)
    step = _conv_backward_step(result)
    batch, positions, channels, kernel, inputs_per_group = 2, 5, 384, 3, 1
    by_hand = 2 * batch * positions * channels * kernel * inputs_per_group
    assert by_hand == 23_040
    assert (step.weight_grad_flops, step.input_grad_flops) == (by_hand, by_hand)
    assert next(s for s in result.steps if s.name == "dwconv").flops == by_hand  # the forward: the same multiply-adds once


def test_an_ungrouped_convolutions_backward_agrees_with_flop_counter() -> None:
    """groups = 1: FlopCounterMode's formula is right there, and ffn's rule gives its number."""
    torch.manual_seed(0)
    module = ConvFFN(64, 96, 3, groups=1)
    result = trace_module(module, backward=True)
    step = _conv_backward_step(result)
    x = torch.randn(2, 5, 64)
    h = module.up(x).transpose(1, 2).detach().requires_grad_(True)
    y = module.dwconv(h)
    with FlopCounterMode(display=False) as counter:
        y.backward(torch.ones_like(y))
    assert step.weight_grad_flops + step.input_grad_flops == counter.get_total_flops() == 2 * 2 * 2 * 5 * 96 * 96 * 3


class SmallFFN(nn.Module):
    def __init__(self, d: int = 32, f: int = 64) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(d, f), nn.Linear(f, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


class Ensemble(nn.Module):
    """torch.func's model ensembling: n FFNs' weights stacked (`stack_module_state`), one
    forward vmapped over them (`functional_call`), the members' outputs averaged."""

    def __init__(self, n: int = 3, d: int = 32, f: int = 64) -> None:
        super().__init__()
        from torch.func import stack_module_state

        params, _buffers = stack_module_state([SmallFFN(d, f) for _ in range(n)])  # type: ignore[arg-type]
        self.stacked = nn.ParameterDict({k.replace(".", "__"): nn.Parameter(v) for k, v in params.items()})
        self.base = [SmallFFN(d, f).to("meta")]  # a list: its weights are the stacked ones, not its own

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torch.func import functional_call, vmap

        params = {k.replace("__", "."): v for k, v in self.stacked.items()}
        return vmap(lambda p, x: functional_call(self.base[0], p, (x,)), in_dims=(0, None))(params, x).mean(0)


@pytest.mark.parametrize("aten", [False, True])
def test_a_torch_func_ensemble_is_traced_with_its_batched_shapes(aten: bool) -> None:
    torch.manual_seed(0)
    module = Ensemble()
    result = trace_module(module, d_model=32, aten=aten)
    shapes = [(s.input_shapes[0], s.output_shape) for s in result.steps]
    members = 3  # each step runs all three at once: the batch of members leads
    assert shapes == [
        ((2, 5, 32), (members, 2, 5, 64)),
        ((members, 2, 5, 64), (members, 2, 5, 64)),
        ((members, 2, 5, 64), (members, 2, 5, 32)),
        ((members, 2, 5, 32), (2, 5, 32)),
    ]
    x = torch.randn(2, 5, 32)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        module(x)
    assert result.matmul_flops == counter.get_total_flops() == 3 * (2 * 10 * 32 * 64) * 2  # 3 members × 2 linears
    assert sum(s.param_count for s in result.steps) == result.total_params == sum(p.numel() for p in module.parameters())


def test_a_torch_func_ensembles_width_is_read_and_its_backward_runs() -> None:
    result = trace_module(Ensemble(), backward=True)
    assert result.module.d_model == 32 and result.backward is not None
    grads = {p.name: p for p in result.backward.params}
    assert set(grads) == {"stacked.up__weight", "stacked.up__bias", "stacked.down__weight", "stacked.down__bias"}
    assert all(g.stats is not None for g in grads.values())


def test_a_torch_module_given_the_wrong_width_is_the_users_not_ffns() -> None:
    """nn.Sequential's forward is torch's code, run because the user asked for it: its shape
    error is the user's, though no frame of the user's file is on the stack."""
    with pytest.raises(Exception) as failed:
        trace_module(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8)), d_model=4)
    assert str(failed.value).startswith("Sequential.forward raised in step 0 (Linear)"), str(failed.value)
    assert "ffn itself" not in str(failed.value)


class YAndNone(nn.Module):
    """A forward that returns `(y, None)`, as some libraries' MLPs do (a bias or a loss slot left empty)."""

    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(16, 64), nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return self.down(torch.relu(self.up(x))), None


@pytest.mark.parametrize(
    ("lang", "said"),
    [
        ("en", "output[0] (2, 5, 16) is followed: the only tensor the forward returned"),
        ("zh", "output[0] (2, 5, 16)：forward 返回的唯一张量"),
    ],
)
def test_y_and_none_says_which_member_is_traced(lang: str, said: str) -> None:
    """The output was a tuple: the footer says which member the trace follows, even with no other tensor to list."""
    import io

    from rich.console import Console

    from ffn_cli.i18n import set_language
    from ffn_cli.render.trace import trace_data, trace_view

    result = trace_module(YAndNone())
    out = YAndNone()(torch.zeros(2, 5, 16))
    assert isinstance(out, tuple) and out[1] is None and tuple(out[0].shape) == result.output_shape
    assert result.output_member == "[0]" and result.other_outputs == ()
    assert trace_data(result)["output_member"] == "[0]"
    set_language(lang)
    try:
        console = Console(width=200, file=io.StringIO(), color_system=None)
        console.print(trace_view(result))
    finally:
        set_language("en")
    assert said in console.file.getvalue()
