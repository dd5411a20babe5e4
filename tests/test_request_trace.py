"""requests/trace.py and services/trace.py: `ffn trace`'s options checked once by declared rules
(each refusal one line, exit 2, through the CLI; the same error from the request itself),
the answer each request knows, and the one pipeline every target goes through: the API's
trace is the CLI's, and the caller's random state is left as it was."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from ffn_cli.errors import FFNError
from ffn_cli.requests.ffn import OneSpec
from ffn_cli.requests.trace import TraceRequest
from ffn_cli.spec import FFNSpec

MODULE_FILE = textwrap.dedent(
    """
    from torch import nn

    class Tiny(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.up, self.down = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

        def forward(self, x):
            return self.down(self.up(x).relu())
    """
)


@pytest.fixture
def module_file(tmp_path: Path) -> str:
    path = tmp_path / "tiny.py"
    path.write_text(MODULE_FILE)
    return f"{path}:Tiny(8)"


def _refused(args: list[str]) -> str:
    result = CliRunner().invoke(app, ["trace", *args])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.mark.parametrize(
    ("args", "option", "words"),
    [
        (["--explain", "--ops"], "--explain", "--ops shows the raw aten ops instead"),
        (["--layer", "3"], "--layer", "picks a layer of a model"),
        (["--reference"], "--reference", "use it with --module"),
        (["--depth", "2"], "--depth", "a registry variant has its own steps"),
        (["--n-heads", "4"], "--n-heads", "add --block"),
        (["--pre-norm"], "--pre-norm", "add --block"),
        (["--tp", "2", "--backward"], "--backward", "run the sharded forward in eval mode"),
        (["--ep", "2", "-v", "moe", "--explain"], "--explain", "run the sharded forward in eval mode"),
        (["--loss", "sum"], "--loss", "add --backward"),
        (["--checkpoint"], "--checkpoint", "add --backward"),
        (["--backward", "--loss", "huber"], "--loss", "choose one of"),
        (["--mode", "predict"], "--mode", "choose one of eval, train"),
        (["--values", "65"], "--values", ""),
        (["-v", "relu,gelu"], "--variant", "ffn trace runs one FFN"),
        (["--page", "out.txt"], "--page", ""),
    ],
)
def test_each_refusal_names_its_option_on_one_line(args: list[str], option: str, words: str) -> None:
    line = _refused(args)
    assert line.startswith(f"error: {option}"), line
    assert words in line


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--check"], "--check"),
        (["--block"], "--block"),
        (["--tp", "2"], "--tp"),
        (["--n-heads", "4"], "--n-heads"),
        (["--preset", "llama-3.1-8b"], "--preset"),
        (["--layer", "1"], "--layer"),
    ],
)
def test_a_module_refuses_what_only_a_registry_variant_takes(module_file: str, args: list[str], option: str) -> None:
    line = _refused(["--module", module_file, *args])
    assert line.startswith(f"error: {option}") and "not with --module" in line


def test_a_module_refuses_the_sizes_of_a_variant_but_takes_its_width(module_file: str) -> None:
    line = _refused(["--module", module_file, "--d-ff", "64"])
    assert line.startswith("error: --d-ff") and "traces your module as it is" in line
    result = CliRunner().invoke(app, ["trace", "--module", module_file, "--d-model", "8", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["module"]["d_model_from"] == "--d-model"


def test_the_sharded_forward_takes_what_it_does_anyway() -> None:
    # eval mode and no values are what --tp runs: naming them changes nothing, so nothing is refused.
    request = TraceRequest(ffn=OneSpec(FFNSpec(d_model=64)), tp=2, mode="EVAL", values=0, typed=frozenset({"mode", "values"}))
    assert request.kind == "parallel"
    with pytest.raises(FFNError, match="sharded forward in eval mode"):
        TraceRequest(ffn=OneSpec(FFNSpec(d_model=64)), tp=2, mode="train")


@pytest.mark.parametrize(
    ("options", "kind", "aten"),
    [
        ({"ffn": OneSpec(FFNSpec())}, "variant", True),
        ({"ffn": OneSpec(FFNSpec()), "text_only": True}, "variant", False),
        ({"ffn": OneSpec(FFNSpec()), "text_only": True, "ops": True}, "variant", True),
        ({"ffn": OneSpec(FFNSpec()), "text_only": True, "page": "run.html"}, "variant", True),
        ({"ffn": OneSpec(FFNSpec()), "ep": 2}, "parallel", True),
        ({"module": "tests/data/module_styles.py:FusedSwiGLU", "text_only": True}, "module", False),
        ({"own": nn.Linear(4, 4)}, "module", True),
        ({"preset": "llama-3.1-8b"}, "variant", True),  # until the service has read the model
    ],
)
def test_a_trace_request_knows_its_answer_and_what_it_records(options: dict, kind: str, aten: bool) -> None:
    request = TraceRequest(**options)
    assert (request.kind, request.aten) == (kind, aten)


def test_a_module_file_is_checked_as_the_request_is_made(tmp_path: Path) -> None:
    """--module's form and file are refused by the request, before torch loads (module_ref.py)."""
    with pytest.raises(FFNError) as raised:
        TraceRequest(module=str(tmp_path / "missing.py") + ":FFN(8)")
    assert (raised.value.option, raised.value.allowed) == ("module", "no such file")
    with pytest.raises(FFNError) as raised:
        TraceRequest(module="tests/data/module_styles.py")
    assert raised.value.allowed.startswith("write FILE.py:NAME")


def test_the_request_refuses_with_the_words_the_cli_prints(module_file: str) -> None:
    with pytest.raises(FFNError) as raised:
        TraceRequest(module=module_file, check=True)
    assert (raised.value.option, raised.value.value) == ("check", True)
    assert _refused(["--module", module_file, "--check"]) == f"error: --check: {raised.value.allowed}"


def test_the_api_trace_of_a_spec_is_the_cli_json_and_leaves_the_random_state() -> None:
    torch.manual_seed(1234)
    before = torch.get_rng_state()
    result = ffn_cli.trace(FFNSpec(variant="swiglu", d_model=32, dropout=0.1), mode="train", values=2)
    assert torch.equal(torch.get_rng_state(), before)
    cli = CliRunner().invoke(app, ["trace", "-v", "swiglu", "-d", "32", "--dropout", "0.1", "--mode", "train", "--values", "2", "--json"])
    assert cli.exit_code == 0, cli.output
    assert result.to_dict() == json.loads(cli.stdout)


def test_a_failed_check_is_printed_then_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    # A threshold no float32 run meets: the table is shown, then the one-line failure, exit 1.
    from ffn_cli.tracing import check as trace_check

    monkeypatch.setitem(trace_check.CHECK_THRESHOLDS, "float32", 0.0)
    result = CliRunner().invoke(app, ["trace", "-d", "16", "--check"])
    assert result.exit_code == 1
    assert "Shape flow, step by step" in result.output
    assert result.output.strip().splitlines()[-1].startswith("error: --check failed")


transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--check"], "--check"),
        (["--tp", "2"], "--tp"),
        (["--block"], "--block"),
        (["--n-heads", "4"], "--n-heads"),
        (["--d-ff", "64"], "--d-ff"),
    ],
)
def test_a_models_own_module_refuses_what_it_would_ignore(tmp_path: Path, args: list[str], option: str) -> None:
    from tests.tiny_families import tiny_config

    config = tmp_path / "config.json"
    config.write_text(json.dumps(tiny_config("cohere")))
    line = _refused(["--config", str(config), *args])
    assert line.startswith(f"error: {option}"), line


def test_the_trace_command_module_imports_no_torch() -> None:
    code = "import sys; import ffn_cli.cli.trace_cmd, ffn_cli.requests.trace; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("args", "option"),
    [(["-d", "0"], "--d-model 0"), (["-v", "swigl"], "--variant swigl"), (["--seq-len", "0"], "--seq-len 0"), (["-b", "0"], "--batch 0")],
)
def test_a_mistyped_option_is_refused_before_torch_is_imported(args: list[str], option: str) -> None:
    # A simple mistake is answered at once, not after the seconds torch takes to import.
    code = (
        "import sys\nfrom typer.testing import CliRunner\nfrom ffn_cli.cli import app\n"
        f"result = CliRunner().invoke(app, ['trace', *{args!r}])\n"
        "print(result.exit_code, 'torch' in sys.modules)\nprint(result.output.strip())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    status, error = out.stdout.strip().split("\n", 1)
    assert error.startswith(f"error: {option}"), out.stdout
    assert status == "2 False", out.stdout
