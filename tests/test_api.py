"""The Python API: `ffn_cli.trace` and `ffn_cli.params` give what the commands print, `to_dict()`
equal to their `--json`, rich and Jupyter views; the tour notebook runs in a real kernel."""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import rich
import torch
from rich.console import Console
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from tests.data import articles

ROOT = Path(__file__).resolve().parents[1]


def _cli_json(*args: str) -> dict:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_all_is_the_stable_surface() -> None:
    assert {"trace", "params", "bench", "Result", "FFNSpec", "FFNError"} <= set(ffn_cli.__all__)
    assert callable(ffn_cli.bench) and callable(ffn_cli.trace)  # plain functions of the API
    assert all(hasattr(ffn_cli, name) for name in ffn_cli.__all__)


def test_trace_of_a_module_file_is_the_clis_json() -> None:
    spec = "tests/data/articles.py:TransformerFFN(64, 256)"
    assert ffn_cli.trace(spec, values=3).to_dict() == _cli_json("trace", "--module", spec, "--values", "3")


def test_trace_of_a_spec_and_a_preset_is_the_clis_json() -> None:
    spec = ffn_cli.FFNSpec("swiglu", 64)
    assert ffn_cli.trace(spec, check=True).to_dict() == _cli_json("trace", "-v", "swiglu", "-d", "64", "--check")
    preset = ffn_cli.trace("llama-2-7b", device="meta", batch=1, seq_len=2).to_dict()
    assert preset == _cli_json("trace", "--preset", "llama-2-7b", "--device", "meta", "-b", "1", "-s", "2")


def test_params_is_the_clis_json() -> None:
    assert ffn_cli.params("llama-2-7b").to_dict() == _cli_json("params", "--preset", "llama-2-7b")
    assert ffn_cli.params(ffn_cli.FFNSpec("relu", 512)).to_dict() == _cli_json("params", "-v", "relu", "-d", "512")


def test_params_never_imports_torch() -> None:
    code = "import sys, ffn_cli; ffn_cli.params('llama-2-7b').to_dict(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_a_result_holds_its_value_and_renders() -> None:
    torch.manual_seed(0)
    module = articles.TransformerFFN(512, 2048)
    r = ffn_cli.trace(module)
    assert r.value.total_params == sum(p.numel() for p in module.parameters()) and r.value.steps[0].name == "linear1"
    out = io.StringIO()
    rich.print(r, file=out)
    assert "1,050,624" in out.getvalue() and "linear2" in out.getvalue()
    bundle = r._repr_mimebundle_()
    # The notebook shows the trace's picture (tests/test_page.py checks its drawing), the text beside it.
    assert "1,050,624" in bundle["text/plain"] and 'class="ffn-page' in bundle["text/html"] and "1,050,624" in bundle["text/html"]
    assert "1,050,624" in r._repr_html_()
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(r)


def test_a_given_input_and_module_backward() -> None:
    r = ffn_cli.trace(articles.GLUFFN(16, 32), torch.randn(1, 3, 16), backward=True)
    assert r.value.input_shape == (1, 3, 16) and r.value.backward is not None
    with pytest.raises(ffn_cli.FFNError):
        ffn_cli.trace(ffn_cli.FFNSpec("relu", 16), torch.randn(1, 3, 16))
    with pytest.raises(ffn_cli.FFNError, match="check"):
        ffn_cli.trace(articles.FFN(16, 32), check=True)


def test_the_tour_notebook_runs_in_a_real_kernel() -> None:
    nbclient = pytest.importorskip("nbclient", reason="nbclient (the dev extra) runs the notebook")
    nbformat = pytest.importorskip("nbformat", reason="nbformat (the dev extra) reads the notebook")
    pytest.importorskip("ipykernel", reason="ipykernel (the dev extra) is the kernel")
    notebook = nbformat.read(ROOT / "docs" / "notebooks" / "tour.ipynb", as_version=4)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    results = [o["data"] for o in outputs if o.output_type == "execute_result"]
    trace_html = results[0]["text/html"]
    assert "ffn trace · TransformerFFN" in trace_html and "1,050,624" in trace_html and "2,099,712" in trace_html
    assert results[1]["text/plain"].startswith("([('linear1', (2, 5, 2048), 1050624)") and "2099712" in results[1]["text/plain"]
    assert "swiglu" in results[2]["text/html"] and "check" in results[2]["text/html"]
    cli = _cli_json("trace", "-v", "swiglu", "-d", "512", "--check")
    assert ast.literal_eval(results[3]["text/plain"]) == ([s["name"] for s in cli["steps"]], True)
    total = 3 * 4096 * 11008  # LLaMA-2-7B's FFN: gate, up, down, no bias
    assert results[4]["text/plain"].startswith(f"('llama-2-7b', {total}, ")
    assert results[5]["text/plain"] == "6738415616"  # Meta's published count for LLaMA-2-7B


def test_params_on_gpus_is_the_clis_json() -> None:
    # The deployment answer: per-GPU memory and its verdict, the roofline per GPU with communication.
    api = ffn_cli.params("llama-3.1-70b", gpu="h100", tp=8, phase="decode", batch=[1, 64]).to_dict()
    cli = _cli_json("params", "--preset", "llama-3.1-70b", "--gpu", "h100", "--tp", "8", "--phase", "decode", "--batch", "1,64")
    assert api == cli and api["per_gpu_memory"]["fits"] is True and api["roofline"]["gpus"]["gpus"] == 8
    moe = ffn_cli.params("qwen3-235b-a22b", gpu="h200", weights="fp8", tp=8, ep=8, phase="decode", batch=64, seq_len=8192)
    args = ("--preset", "qwen3-235b-a22b", "--gpu", "h200", "--weights", "fp8", "--tp", "8", "--ep", "8")
    assert moe.to_dict() == _cli_json("params", *args, "--phase", "decode", "--batch", "64", "--seq-len", "8192")
    assert "does not fit" not in str(moe) and "memory per GPU" in str(moe)


def test_params_leaves_out_the_mtp_layer_as_the_cli_does() -> None:
    api = ffn_cli.params("deepseek-v3", mtp=False, gpu="h200", tp=8, ep=8).to_dict()
    assert api == _cli_json("params", "--preset", "deepseek-v3", "--no-mtp", "--gpu", "h200", "--tp", "8", "--ep", "8")


def test_params_of_one_ffn_answers_its_gpu_and_refuses_a_models_costs() -> None:
    # One FFN on a GPU is its forward's roofline, as `ffn params -v relu --gpu h100` prints it.
    assert ffn_cli.params(ffn_cli.FFNSpec("relu", 512), gpu="h100").to_dict() == _cli_json("params", "-v", "relu", "--gpu", "h100")
    with pytest.raises(ffn_cli.FFNError, match="weights"):
        ffn_cli.params(ffn_cli.FFNSpec("relu", 512), gpu="h100", weights="fp8")
