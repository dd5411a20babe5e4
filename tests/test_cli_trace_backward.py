"""`ffn trace --backward` as a command: options, errors, --json, and tables whole at 80 columns."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console
from typer.testing import CliRunner

from ffn_cli.block import BlockSpec
from ffn_cli.cli.ffn_app import app
from ffn_cli.render.backward import backward_sections
from ffn_cli.render.format import fmt_count
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.run import trace

pytestmark = pytest.mark.usefixtures("one_thread")


def _run(*args: str, columns: int = 120) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["trace", *args], env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout, result.stderr


def test_backward_shows_its_steps_and_totals() -> None:
    code, out, _ = _run("--backward", "--check")
    assert code == 0
    assert "Backward, step by step" in out and "Saved tensors each backward step reads" in out
    assert "3.00× forward" in out and "worst relative gradient error" in out


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--backward", "--loss", "hinge"], "--loss"),
        (["--loss", "sum"], "--loss"),
        (["--checkpoint"], "--checkpoint"),
        (["--backward", "--tp", "2"], "--backward"),
    ],
)
def test_bad_options_are_one_line(args: list[str], option: str) -> None:
    code, out, err = _run(*args)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and option.lstrip("-") in err
    assert "Traceback" not in out + err


def test_json_carries_the_backward() -> None:
    code, out, _ = _run("-v", "swiglu", "-d", "64", "--backward", "--json", "--loss", "sum")
    assert code == 0
    data = json.loads(out)
    steps = data["backward_steps"]
    assert data["loss"] == "sum"
    assert data["backward_flops"] == sum(s["flops"] for s in steps if not s["recompute"])
    assert data["backward_weight_grad_flops"] == data["backward_input_grad_flops"] == data["matmul_flops"]
    assert data["forward_backward_to_forward"] == pytest.approx(1 + data["backward_flops"] / data["total_flops"])
    assert set(data["grad_norms"]) == {"gate_proj.weight", "up_proj.weight", "down_proj.weight"}
    assert all(s["grad_stats"] is not None for s in steps)
    assert steps[0]["saved_inputs"][0]["saved_by"] == "multiply"


def _sections(width: int, **kwargs: object) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    result = trace(**kwargs)  # type: ignore[arg-type]
    for part in backward_sections(result):
        console.print(part)
    return console.file.getvalue()  # type: ignore[attr-defined]


CASES = {
    "relu": {"spec": FFNSpec()},
    "swiglu checkpoint": {"spec": FFNSpec(variant="swiglu"), "checkpoint": True},
    "moe": {"spec": FFNSpec(variant="moe", d_model=64, experts=4, shared_experts=1)},
    "block": {"spec": FFNSpec(variant="swiglu"), "block": BlockSpec.around(FFNSpec(variant="swiglu"))},
    "70B meta": {"spec": FFNSpec(variant="swiglu", d_model=8192, d_ff=28672), "batch": 8, "seq_len": 4096, "device": "meta"},
}


@pytest.mark.parametrize("case", list(CASES))
def test_tables_stay_whole_at_80_columns(case: str) -> None:
    """Every line fits, and every step's FLOPs appear whole (exact, or with an SI prefix)."""
    kwargs = dict(CASES[case])
    text = _sections(80, backward=True, **kwargs)
    assert max(len(line) for line in text.splitlines()) <= 80
    result = trace(backward=True, **kwargs)  # type: ignore[arg-type]
    assert result.backward is not None
    numbers = set(re.findall(r"[\d,.]+(?: [kMGTP])?", text))
    for s in result.backward.steps:
        for flops in (s.weight_grad_flops, s.input_grad_flops):
            if flops and result.backward.flops < 10**13:
                assert fmt_count(flops) in numbers, (s.of, flops)


def test_a_failed_gradient_check_is_an_error() -> None:
    from dataclasses import replace

    from ffn_cli.tracing import CheckResult
    from ffn_cli.tracing.check import check_failure

    result = trace(FFNSpec(d_model=16, d_ff=32), backward=True, check=True)
    assert result.backward is not None and check_failure(result) is None
    failed = replace(result, backward=replace(result.backward, check=CheckResult(1.0, 1e-4, "float32")))
    error = check_failure(failed)
    assert error is not None and "gradient" in str(error)


def test_a_saved_chunk_is_marked_as_part_of_the_tensor_it_keeps_alive() -> None:
    """A fused gate/up projection split by chunk: autograd keeps each half, and each half keeps
    the whole (B, T, 2·d_ff) storage alive. Its row says so; a whole tensor's row does not."""
    d_ff = 96  # module_styles.FusedSwiGLU's default
    args = ["trace", "--module", "tests/data/module_styles.py:FusedSwiGLU", "--backward"]
    text = CliRunner().invoke(app, args, env={"COLUMNS": "120"}).stdout
    data = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    table = text[text.index("Saved tensors each backward step reads") :].split("\n\n")[0]
    whole = 2 * 5 * 2 * d_ff * 4  # the fused output, (2, 5, 2·d_ff) in float32: what one half keeps
    marked = [line for line in table.splitlines() if "chunk *" in line]
    reads = [r for s in data["backward_steps"] for r in s["saved_inputs"] if r["saved_by"] == "chunk"]
    assert reads and all(r["bytes"] == whole and r["shape"] == [2, 5, d_ff] for r in reads)
    assert len(marked) == len(reads) and table.count(" *") == len(reads)
    assert "* part of a larger tensor" in text
