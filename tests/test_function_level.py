"""The function-level recorder (torch calls) against the aten level and FlopCounterMode.

The text view records each torch call (`tracing/function_level.py`); `--ops` and `--json` record
aten ops. Both must make the same steps: the same shapes, weights, FLOPs, statistics and
notes, so the text a learner reads is the same whichever level ran. FlopCounterMode counts the
matmul FLOPs of the same forward by its own path.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from ffn_cli.block import BlockSpec
from ffn_cli.modules import build_ffn
from ffn_cli.render.trace import trace_view
from ffn_cli.tracing.any_module import trace_module
from ffn_cli.tracing.result import TraceResult, TraceStep
from ffn_cli.tracing.run import trace
from tests.data import articles, module_styles
from tests.helpers import ALL_VARIANTS, small_spec
from tests.test_own_module_styles import FairseqFFN, MegatronMLP, PositionWiseFFN, ReturnsDict, SwitchGate, T5LayerFF, TupleMLP


def _steps(steps: tuple[TraceStep, ...]) -> list[TraceStep]:
    """The steps without what names the ops themselves (aten ops or torch calls)."""
    return [dataclasses.replace(s, aten_ops=(), op_indices=(), substeps=tuple(_steps(s.substeps))) for s in steps]


def _text(result: TraceResult) -> str:
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(trace_view(result, explain=True))
    return console.file.getvalue()  # type: ignore[attr-defined]


def _made(make):
    """The module `make` builds, with the same weights each time."""
    torch.manual_seed(0)
    return make()


def _same(aten: TraceResult, calls: TraceResult) -> None:
    assert _steps(calls.steps) == _steps(aten.steps)
    assert (calls.total_flops, calls.matmul_flops, calls.saved_bytes) == (aten.total_flops, aten.matmul_flops, aten.saved_bytes)
    assert calls.warnings == aten.warnings
    assert _text(calls) == _text(aten)
    assert not any(op.op.startswith("aten.") for op in calls.ops), "every call of these forwards is counted at the function level"


@pytest.mark.parametrize("variant", ALL_VARIANTS)
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_every_registry_variant_makes_the_same_steps_at_both_levels(variant: str, device: str) -> None:
    for mode, bias, block in itertools.product(("eval", "train"), (False, True), (False, True)):
        spec = small_spec(variant, bias=bias, dropout=0.1 if mode == "train" else 0.0)
        around = BlockSpec.around(spec, n_heads=2) if block else None
        run = {"device": device, "mode": mode, "block": around, "values": 3}
        _same(trace(spec, **run), trace(spec, **run, aten=False))


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_the_function_level_matmul_flops_are_flop_counter_modes(variant: str) -> None:
    spec = small_spec(variant, bias=True)
    module = build_ffn(spec, seed=0).eval()
    x = torch.randn(2, 5, spec.d_model)
    with FlopCounterMode(display=False) as counter:
        module(x)
    assert trace(spec, aten=False).matmul_flops == counter.get_total_flops()


STYLES = {
    "article TransformerFFN": lambda: articles.TransformerFFN(16, 64),
    "article FFN": lambda: articles.FFN(16, 64),
    "article FP16SafeFFN": lambda: articles.FP16SafeFFN(16, 64),
    "article GLUFFN": lambda: articles.GLUFFN(16, 32),
    "article SparseFFN": lambda: articles.SparseFFN(16, 32),
    "nn.Sequential": module_styles.sequential_ffn,
    "functional": module_styles.FunctionalFFN,
    "fused SwiGLU": module_styles.FusedSwiGLU,
    "GPT-2 Conv1D": module_styles.GPT2MLP,
    "tied": module_styles.TiedFFN,
    "loop MoE": module_styles.LoopMoE,
    "d2l lazy": lambda: PositionWiseFFN(64, 16),
    "Megatron bias-GeLU Function": MegatronMLP,
    "T5 wrapper": T5LayerFF,
    "fairseq plain function": FairseqFFN,
    "tuple output": TupleMLP,
    "Switch gate": SwitchGate,
    "dict output": ReturnsDict,
}
# Forwards with a call only the aten level counts (einsum): still the same steps, through it.
THROUGH_ATEN = {"einsum": module_styles.EinsumFFN, "article MoEFFN": lambda: articles.MoEFFN(16, 32)}


@pytest.mark.parametrize("make", list(STYLES.values()) + list(THROUGH_ATEN.values()), ids=list(STYLES) + list(THROUGH_ATEN))
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_a_module_of_any_style_makes_the_same_steps_at_both_levels(make, mode: str) -> None:
    aten = trace_module(_made(make), mode=mode, values=3)
    calls = trace_module(_made(make), mode=mode, values=3, aten=False)
    if make in THROUGH_ATEN.values():
        assert any(op.op.startswith("aten.") for op in calls.ops)
        assert _steps(calls.steps) == _steps(aten.steps) and _text(calls) == _text(aten)
        return
    _same(aten, calls)


def test_a_module_on_meta_makes_the_same_steps_at_both_levels() -> None:
    for make in (module_styles.FusedSwiGLU, module_styles.TiedFFN, lambda: articles.TransformerFFN(16, 64)):
        _same(trace_module(_made(make), device="meta"), trace_module(_made(make), device="meta", aten=False))


def test_an_in_place_call_is_measured_after_it_wrote() -> None:
    class InPlace(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(8, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.up(x)
            h.mul_(2.0)
            h += 1.0
            return h.relu_()

    _same(trace_module(_made(InPlace), values=4), trace_module(_made(InPlace), values=4, aten=False))


def test_an_item_assignment_is_a_step_whose_output_is_the_tensor_it_wrote() -> None:
    class Assigns(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(8, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.up(x)
            h[..., 0] = 0.0
            return torch.relu(h)

    module, x = _made(Assigns), torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(3))
    steps = {s.name: s for s in trace_module(module, x, aten=False).steps}
    assert steps["setitem"].output_shape == (2, 5, 16) and steps["relu"].inputs_from == ("setitem",)
    with torch.no_grad():  # the second path: the written tensor, computed here
        h = module.up(x)
        h[..., 0] = 0.0
    assert steps["relu"].input_stats.zeros == int((h == 0).sum()) >= 10
    assert steps["relu"].input_stats.mean == pytest.approx(float(h.double().mean()), rel=1e-9)


CHECK_IMPORTS = """
import sys
from ffn_cli.cli import main
sys.argv = ["ffn", *sys.argv[1:]]
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
loaded = [name for name in ("torch._dynamo", "sympy") if name in sys.modules]
print("loaded:", ",".join(loaded) or "-", file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--variant", "moe", "--explain"],
        ["--block", "--variant", "swiglu"],
        ["--module", "tests/data/module_styles.py:FusedSwiGLU"],
    ],
    ids=["default", "moe explain", "block", "module"],
)
def test_a_text_trace_imports_neither_dynamo_nor_sympy(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", CHECK_IMPORTS, "trace", *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "loaded: -" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--json"],
        ["--ops"],
        ["--backward"],
        ["--backward", "--module", "tests/data/module_styles.py:FusedSwiGLU"],
        ["--module", "tests/data/module_styles.py:FusedSwiGLU", "--reference"],
        ["--page", "PAGE"],
    ],
    ids=["json", "ops", "backward", "module backward", "reference", "page"],
)
def test_an_aten_level_trace_imports_neither_dynamo_nor_sympy(args: list[str], tmp_path: Path) -> None:
    """ffn's dispatch modes leave their dispatch unwrapped (tracing/torch_names.DispatchMode), and
    a backward starts from a scalar (tracing/gradient_seed.py): neither imports Dynamo or SymPy.
    (`--checkpoint` does: torch.utils.checkpoint is wrapped in Dynamo's disable by torch itself.)"""
    args = [str(tmp_path / "page.html") if a == "PAGE" else a for a in args]
    done = subprocess.run([sys.executable, "-c", CHECK_IMPORTS, "trace", *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "loaded: -" in done.stderr


BARE_META_FORWARD = """
import sys, torch
module = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512)).to("meta")
module(torch.empty(2, 5, 512, device="meta"))
print("loaded:", ",".join(name for name in ("torch._dynamo", "sympy") if name in sys.modules) or "-", file=sys.stderr)
"""


def test_a_meta_trace_imports_only_what_the_bare_meta_forward_does() -> None:
    """torch's meta kernels (Python decompositions) import what they need themselves."""
    bare = subprocess.run([sys.executable, "-c", BARE_META_FORWARD], capture_output=True, text=True, timeout=300)
    ours = subprocess.run([sys.executable, "-c", CHECK_IMPORTS, "trace", "--device", "meta"], capture_output=True, text=True, timeout=300)
    assert bare.returncode == 0 and ours.returncode == 0, bare.stderr + ours.stderr
    assert ours.stderr.strip().splitlines()[-1] == bare.stderr.strip().splitlines()[-1]


def test_ops_and_json_record_the_aten_ops() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK_IMPORTS, "trace", "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert '"aten_ops": [' in done.stdout and '"aten.addmm"' in done.stdout


@torch.jit.script
def _scripted_bias_gelu(bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


class _ScriptedGeLU(nn.Module):
    """Megatron's style: a jit-scripted function in forward, which no TorchFunctionMode sees."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.bias, self.fc2 = nn.Linear(16, 64, bias=False), nn.Parameter(torch.zeros(64)), nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(_scripted_bias_gelu(self.bias, self.fc1(x)))


class _Transposed(nn.Module):
    """A property that computes (x.T, w.mT): recorded as the aten ops it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(16, 48))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.w) @ self.w.mT


@pytest.mark.parametrize(
    "make", [_ScriptedGeLU, lambda: torch.jit.script(module_styles.FunctionalFFN()), _Transposed], ids=["function", "module", "property"]
)
def test_what_the_function_level_cannot_see_is_recorded_at_the_aten_level(make) -> None:
    aten = trace_module(_made(make), values=3)
    calls = trace_module(_made(make), values=3, aten=False)
    assert _steps(calls.steps) == _steps(aten.steps) and _text(calls) == _text(aten)
    with FlopCounterMode(display=False) as counter:
        _made(make)(torch.randn(*calls.input_shape))
    assert calls.matmul_flops == counter.get_total_flops() > 0


@pytest.mark.parametrize(("model_type", "layer", "device"), [("cohere", 0, "cpu"), ("jamba", 1, "cpu"), ("stablelm", 0, "meta")])
def test_a_transformers_module_makes_the_same_steps_at_both_levels(model_type: str, layer: int, device: str) -> None:
    pytest.importorskip("transformers")
    from ffn_cli.tracing.model_module import trace_model_module
    from tests.tiny_families import tiny_config

    run = {"name": model_type, "source": "config", "layer": layer, "batch": 2, "seq_len": 3, "device": device, "values": 3}
    aten = trace_model_module(tiny_config(model_type), **run)
    calls = trace_model_module(tiny_config(model_type), **run, aten=False)
    assert _steps(calls.steps) == _steps(aten.steps) and _text(calls) == _text(aten)
    assert calls.total_flops == aten.total_flops > 0


def test_a_binary_max_counts_as_aten_counts_it() -> None:
    """torch.max(a, b) is aten's maximum (one FLOP per element), torch.max(a, dim) a reduction (none)."""

    class Maxes(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(8, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.up(x)
            return torch.max(h, torch.zeros_like(h)) + torch.max(h, dim=-1, keepdim=True).values

    aten, calls = trace_module(_made(Maxes)), trace_module(_made(Maxes), aten=False)
    assert _steps(calls.steps) == _steps(aten.steps)
    assert [s.elementwise_flops for s in calls.steps if s.name == "max"] == [2 * 5 * 16]
