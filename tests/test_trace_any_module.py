"""Any nn.Module through the one trace pipeline: the tutorials' classes exactly as printed and
modules written in many styles. Parameters are held against the module's own unique tensors,
matmul FLOPs against FlopCounterMode (total and per submodule step), shapes against forward hooks."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.utils.checkpoint
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.errors import FFNError
from ffn_cli.render.trace import trace_data
from ffn_cli.tracing.any_module import trace_module
from ffn_cli.tracing.pipeline import make_input
from tests.data import articles, module_styles

ARTICLES: dict[str, Callable[[], nn.Module]] = {
    "TransformerFFN": lambda: articles.TransformerFFN(64, 256),
    "FFN": lambda: articles.FFN(64, 256),
    "FP16SafeFFN": lambda: articles.FP16SafeFFN(64, 256),
    "GLUFFN": lambda: articles.GLUFFN(64, 128),
    "MoEFFN": lambda: articles.MoEFFN(64, 128),
    "SparseFFN": lambda: articles.SparseFFN(64, 256),
}
STYLES: dict[str, Callable[[], nn.Module]] = {
    "sequential": module_styles.sequential_ffn,
    "functional": module_styles.FunctionalFFN,
    "fused_chunk": module_styles.FusedSwiGLU,
    "gpt2_conv1d": module_styles.GPT2MLP,
    "tied": module_styles.TiedFFN,
    "loop_moe": module_styles.LoopMoE,
    "einsum": module_styles.EinsumFFN,
}
MODULES = {**ARTICLES, **STYLES}
DATA_DEPENDENT = {"loop_moe"}  # torch.where over the routing: no values on meta


def _unique_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())  # parameters() yields a shared tensor once


def _flop_counts(module: nn.Module, x: torch.Tensor) -> dict[str, int]:
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        module(x)
    return {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}


def _hook_shapes(module: nn.Module, x: torch.Tensor) -> dict[str, tuple[int, ...]]:
    """Each submodule's output shape, as forward hooks see it (the first call of each)."""
    shapes: dict[str, tuple[int, ...]] = {}

    def hook(name: str) -> Callable[..., None]:
        def seen(_m: nn.Module, _args: Any, out: Any) -> None:
            shapes.setdefault(name, tuple((out[0] if isinstance(out, tuple) else out).shape))

        return seen

    handles = [child.register_forward_hook(hook(name)) for name, child in module.named_modules() if name]
    with torch.no_grad():
        module(x)
    for h in handles:
        h.remove()
    return shapes


@pytest.mark.parametrize("name", list(MODULES))
def test_numbers_from_a_second_path(name: str) -> None:
    torch.manual_seed(0)
    module = MODULES[name]().eval()
    result = trace_module(module, batch=2, seq_len=3)
    x = make_input((2, 3, result.module.d_model), torch.device("cpu"), torch.float32, 0)  # the trace's own input
    counts = _flop_counts(module, x)
    assert result.total_params == _unique_params(module)
    assert sum(s.param_count for s in result.steps) == _unique_params(module)  # each tensor counted once
    assert result.matmul_flops == counts["Global"]
    hooks = _hook_shapes(module, x)
    root = type(module).__name__
    for step in result.steps:
        if step.module_class:  # a submodule's call: its own FLOPs, shape and parameters
            assert step.matmul_flops == counts.get(f"{root}.{step.name.split('#')[0]}", 0), step.name
            assert step.output_shape == hooks[step.name.split("#")[0]], step.name
            sub = module.get_submodule(step.name.split("#")[0])
            assert step.param_count == _unique_params(sub)
    with torch.no_grad():
        assert result.output_shape == tuple(module(x).shape)


@pytest.mark.parametrize("name", sorted(set(MODULES) - DATA_DEPENDENT))
def test_on_meta_the_same_shapes_and_flops(name: str) -> None:
    torch.manual_seed(0)
    cpu = trace_module(MODULES[name]().eval())
    with torch.device("meta"):
        meta_module = MODULES[name]()
    meta = trace_module(meta_module.eval())
    assert meta.device == "meta" and meta.input_stats is None
    assert [(s.name, s.output_shape, s.matmul_flops, s.param_count) for s in meta.steps] == [
        (s.name, s.output_shape, s.matmul_flops, s.param_count) for s in cpu.steps
    ]


def test_a_data_dependent_loop_on_meta_is_one_clear_error() -> None:
    with torch.device("meta"):
        module = module_styles.LoopMoE()
    # The reason, not the symptom: routing reads values, and meta tensors hold none.
    with pytest.raises(FFNError, match=r"LoopMoE routes by value .*trace it on --device cpu"):
        trace_module(module)


def test_the_articles_transformer_ffn_as_the_article_prints_it() -> None:
    # Article 001: weights (2048, 512), bias (2048,), (2, 5, 512) → (2, 5, 2048) → (2, 5, 512), 1,050,624 + 1,049,088.
    result = trace_module(articles.TransformerFFN(512, 2048))
    steps = {s.name: s for s in result.steps}
    assert [s.name for s in result.steps] == ["linear1", "activation", "dropout", "linear2"]
    assert {p.name: p.shape for p in steps["linear1"].params} == {"linear1.weight": (2048, 512), "linear1.bias": (2048,)}
    assert steps["linear1"].output_shape == (2, 5, 2048) and steps["linear2"].output_shape == (2, 5, 512)
    assert (steps["linear1"].param_count, steps["linear2"].param_count) == (512 * 2048 + 2048, 2048 * 512 + 512)
    assert result.total_params == 2_099_712 and result.module.d_model_from == "linear1.in_features"


def test_a_weight_used_twice_is_counted_once_and_multiplied_twice() -> None:
    module = module_styles.TiedFFN(32, 128)
    result = trace_module(module)
    reads = [s for s in result.steps if s.params]
    assert len(reads) == 2 and [p.reused for s in reads for p in s.params] == [False, True]
    assert result.total_params == sum(s.param_count for s in result.steps) == 32 * 128
    assert result.matmul_flops == 2 * (2 * 10 * 32 * 128)


def test_a_tensor_attribute_is_a_constant_not_a_parameter() -> None:
    result = trace_module(articles.SparseFFN(64, 256))
    mul = next(s for s in result.steps if s.name == "mul")
    assert [c.name for c in mul.constants] == ["mask"] and not mul.params
    assert trace_data(result)["steps"][1]["constants"] == [{"name": "mask", "shape": [256], "count": 256}]


def test_functional_ops_are_steps_named_after_the_call() -> None:
    names = [s.name for s in trace_module(articles.MoEFFN(16, 32), depth=1).steps]
    assert names == ["gate", "softmax", "experts.0", "experts.1", "experts.2", "experts.3", "stack", "einsum"]
    names = [s.name for s in trace_module(module_styles.FusedSwiGLU()).steps]
    assert names == ["gate_up", "chunk", "silu", "mul", "down"]


def test_f_glu_costs_its_sigmoid_and_multiply() -> None:
    """F.glu(x) = a·σ(b): 0 FLOPs once, as if gating were free. By hand: the sigmoid's 4
    operations (exp, add, divide, negate) and one multiply per output element."""
    glu = next(s for s in trace_module(articles.GLUFFN(16, 32)).steps if s.name == "glu")
    assert glu.output_shape == (2, 5, 32)
    assert glu.elementwise_flops == (4 + 1) * 2 * 5 * 32


def test_depth_opens_the_submodules() -> None:
    result = trace_module(articles.MoEFFN(16, 32), depth=2)
    assert "experts.0.linear1" in [s.name for s in result.steps] and "experts.0.gelu" in [s.name for s in result.steps]
    assert result.matmul_flops == _flop_counts(articles.MoEFFN(16, 32), torch.randn(2, 5, 16))["Global"]


def test_backward_matmuls_against_flop_counter() -> None:
    torch.manual_seed(0)
    module = articles.TransformerFFN(64, 256)
    result = trace_module(module, backward=True)
    assert result.backward is not None
    x = torch.randn(2, 5, 64, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        module(x).backward(torch.randn(2, 5, 64))
    assert result.matmul_flops + result.backward.matmul_flops == counter.get_total_flops()
    assert {p.name for p in result.backward.params} == {n for n, _ in module.named_parameters()}


def test_checkpointed_backward_recomputes() -> None:
    torch.manual_seed(0)
    module = articles.FFN(64, 256).eval()
    result = trace_module(module, backward=True, checkpoint=True)
    assert result.backward is not None and 0 < result.backward.recompute_flops <= result.total_flops
    x = torch.randn(2, 5, 64, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        torch.utils.checkpoint.checkpoint(module, x, use_reentrant=False).backward(torch.randn(2, 5, 64))
    assert result.matmul_flops + result.backward.matmul_flops == counter.get_total_flops()  # the recomputation included


def test_an_input_given_sets_the_shapes() -> None:
    result = trace_module(articles.GLUFFN(16, 32), torch.randn(3, 7, 16))
    assert result.input_shape == result.output_shape == (3, 7, 16) and result.module.d_model_from == "the input given"


def test_d_model_from_a_raw_matrix_is_checked_by_a_trial_run() -> None:
    assert trace_module(module_styles.EinsumFFN(32, 128)).module.d_model == 32  # w_in (32, 128): read as (in, out)
    assert trace_module(module_styles.FunctionalFFN(32, 128)).module.d_model == 32  # w1 (128, 32): F.linear's (out, in)


# --- the command line ------------------------------------------------------------------------

STYLES_FILE = "tests/data/module_styles.py"
ARTICLES_FILE = "tests/data/articles.py"


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, ["trace", *args])


def test_cli_module_from_a_file_with_literal_arguments() -> None:
    result = _run("--module", f"{ARTICLES_FILE}:TransformerFFN(512, 2048, dropout=0.1)", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["module"]["origin"] == f"{ARTICLES_FILE}:TransformerFFN(512, 2048, dropout=0.1)"
    assert data["total_params"] == 2_099_712 and data["input_shape"] == [2, 5, 512]
    assert data["module"]["d_model_from"] == "linear1.in_features"


def test_cli_module_from_a_package_and_a_factory() -> None:
    result = _run("--module", "tests.data.module_styles:sequential_ffn(d_model=16, d_ff=64)", "-d", "16", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [s["name"] for s in data["steps"]] == ["0", "1", "2"] and data["module"]["d_model_from"] == "--d-model"


def test_cli_module_instance() -> None:
    result = _run("--module", f"{STYLES_FILE}:tied_instance", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total_params"] == 16 * 48


def test_cli_text_shows_the_header_and_steps_at_80_columns() -> None:
    result = CliRunner().invoke(app, ["trace", "--module", f"{ARTICLES_FILE}:TransformerFFN(512, 2048)"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "from linear1.in_features" in result.stdout and "1,050,624" in result.stdout and "2,099,712" in result.stdout
    assert all(len(line) <= 80 for line in result.stdout.splitlines())


def _shape(shape: list[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def test_article_001_in_chinese_at_80_columns_shows_every_shape_and_weight_shape() -> None:
    """The tutorial's demo (docs/own-module.md), in the tutorial's language, in a terminal of 80."""
    module = f"{ARTICLES_FILE}:TransformerFFN(512, 2048)"
    result = CliRunner().invoke(app, ["--lang", "zh", "trace", "--module", module], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "形状流，逐步展示" in text and "你的模块" in text and all(len(line) <= 80 for line in text.splitlines())
    data = json.loads(_run("--module", module, "--json").stdout)
    for step in data["steps"]:
        wanted = [_shape(s) for s in step["input_shapes"]] + ["→ " + _shape(step["output_shape"])]
        wanted += [f"{p['name'].removeprefix(step['name'] + '.')} {_shape(p['shape'])}" for p in step["params"]]
        assert not [w for w in wanted if w not in text], step["name"]
    assert [_shape(p["shape"]) for s in data["steps"] for p in s["params"]] == ["(2048, 512)", "(2048,)", "(512, 2048)", "(512,)"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (f"{ARTICLES_FILE}:TransformerFFN(512)", "TransformerFFN(d_model, d_ff, dropout=0.1): missing a required argument: 'd_ff'"),
        (f"{ARTICLES_FILE}:TransformerFFN(512, n)", "literal values only"),
        (f"{ARTICLES_FILE}:TransformerFFN(*[1])", "literal values only"),
        (f"{ARTICLES_FILE}:Nope", "has no Nope; its modules: TransformerFFN, FFN"),
        ("tests/data/absent.py:X", "no such file"),
        ("no_colon", "write FILE.py:NAME"),
    ],
)
def test_cli_bad_module_is_one_line(spec: str, expected: str) -> None:
    result = _run("--module", spec)
    assert result.exit_code == 2 and expected in result.stderr and result.stderr.count("\n") == 1, result.output


def test_cli_forward_that_raises_names_the_module_and_step() -> None:
    result = _run("--module", f"{STYLES_FILE}:BrokenFFN")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "BrokenFFN.forward raised in step down (Linear)" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize(
    "extra", [["--check"], ["--variant", "swiglu"], ["--d-ff", "64"], ["--tp", "2"], ["--block"], ["--preset", "llama-2-7b"]]
)
def test_cli_registry_options_are_refused_with_module(extra: list[str]) -> None:
    result = _run("--module", f"{ARTICLES_FILE}:FFN", *extra)
    assert result.exit_code == 2 and extra[0] in result.stderr and result.stderr.count("\n") == 1, result.output


def test_cli_depth_is_refused_for_a_registry_variant() -> None:
    result = _run("--depth", "2")
    assert result.exit_code == 2 and "--depth" in result.stderr


def test_cli_options_any_module_takes() -> None:
    args = ["--module", f"{ARTICLES_FILE}:FFN(32, 64)", "-b", "3", "-s", "4", "--dtype", "float64", "--mode", "train"]
    result = _run(*args, "--values", "3", "--ops", "--backward", "--loss", "sum", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["input_shape"] == [3, 4, 32] and data["dtype"] == "float64" and data["mode"] == "train"
    assert data["ops"] and data["backward_steps"] and len(data["input_values"]) == 3
    meta = _run("--module", f"{ARTICLES_FILE}:FFN(32, 64)", "--device", "meta", "--json")
    assert meta.exit_code == 0 and json.loads(meta.stdout)["device"] == "meta"


def test_bad_depth_is_refused() -> None:
    with pytest.raises(FFNError, match="depth"):
        trace_module(articles.FFN(8, 16), depth=0)


def test_cli_svg_and_depth(tmp_path: Any) -> None:
    target = tmp_path / "moe.svg"
    result = _run("--module", f"{ARTICLES_FILE}:MoEFFN(16, 32)", "--depth", "2", "--svg", str(target))
    assert result.exit_code == 0, result.output
    text = target.read_text()
    assert text.startswith("<svg") and "experts.0.linear1" in text.replace("&#160;", " ")
