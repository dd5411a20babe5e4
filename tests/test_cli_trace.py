from __future__ import annotations

import io
import json

import pytest
import torch
from rich.console import Console
from typer.testing import CliRunner

from ffn_cli.block import BlockSpec
from ffn_cli.cli.ffn_app import app
from ffn_cli.i18n import set_language
from ffn_cli.render.trace import trace_data, trace_view
from ffn_cli.spec import FFNSpec
from ffn_cli.tracing.run import trace

pytestmark = pytest.mark.usefixtures("one_thread")

WIDE = {"COLUMNS": "120"}


def _run(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["trace", *args], env=WIDE)
    return result.exit_code, result.stdout, result.stderr


def _render(*, ops: bool = False, values: int = 0, width: int = 120, **kwargs: object) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    spec = kwargs.pop("spec", FFNSpec(dropout=0.1))
    console.print(trace_view(trace(spec, values=values, **kwargs), ops=ops, values=values))  # type: ignore[arg-type]
    return console.file.getvalue()  # type: ignore[attr-defined]


# --- golden snapshots, at 80 and 120 columns ------------------------------------------------

GOLDEN_WIDTHS = pytest.mark.parametrize("width", [80, 120])


@GOLDEN_WIDTHS
def test_golden_default(golden, width: int) -> None:
    golden(f"trace_default_{width}.txt", _render(width=width, values=5))


@GOLDEN_WIDTHS
def test_golden_default_in_chinese(golden, width: int) -> None:
    set_language("zh")
    golden(f"trace_default_zh_{width}.txt", _render(width=width, values=5))


@GOLDEN_WIDTHS
def test_golden_backward_in_chinese(golden, width: int) -> None:
    set_language("zh")
    golden(f"trace_backward_zh_{width}.txt", _render(width=width, backward=True))


@GOLDEN_WIDTHS
def test_golden_swiglu_70b_meta(golden, width: int) -> None:
    golden(
        f"trace_swiglu_meta_{width}.txt",
        _render(width=width, spec=FFNSpec(variant="swiglu", d_model=8192, d_ff=28672), batch=8, seq_len=4096, device="meta"),
    )


@GOLDEN_WIDTHS
def test_golden_moe_meta(golden, width: int) -> None:
    spec = FFNSpec(variant="moe", d_model=64, d_ff=128, experts=4, top_k=2, shared_experts=1)
    golden(f"trace_moe_meta_{width}.txt", _render(width=width, spec=spec, device="meta"))


@GOLDEN_WIDTHS
def test_golden_block_meta(golden, width: int) -> None:
    spec = FFNSpec(dropout=0.1)
    golden(f"trace_block_meta_{width}.txt", _render(width=width, spec=spec, block=BlockSpec.around(spec, n_kv_heads=2), device="meta"))


@GOLDEN_WIDTHS
def test_golden_ops_meta(golden, width: int) -> None:
    golden(
        f"trace_ops_meta_{width}.txt",
        _render(width=width, spec=FFNSpec(variant="geglu", d_model=64, fused_gate_up=True), device="meta", ops=True),
    )


# --- the command -----------------------------------------------------------------------------


def test_default_is_the_tutorial_demo(runner: CliRunner) -> None:
    code, out, _ = _run(runner)
    assert code == 0
    for text in ("(2, 5, 512)", "→ (2, 5, 2048)", "weight (2048, 512)", "bias (2048,)", "weight (512, 2048)", "2,099,712", "1,050,624"):
        assert text in out, text
    assert "negatives" in out and " → 0" in out
    assert "output shape = input shape ✓" in out
    assert "unchanged (dropout is off in eval mode)" in out


def test_train_mode_shows_dropout_changes(runner: CliRunner) -> None:
    code, out, _ = _run(runner, "--mode", "train", "--dropout", "0.1", "-d", "32")
    assert code == 0 and "train mode" in out and "zeroed" in out


def test_values_and_ops(runner: CliRunner) -> None:
    code, out, _ = _run(runner, "-d", "32", "--values", "3")
    assert code == 0 and "First 3 values of token 0" in out
    code, out, _ = _run(runner, "-d", "32", "--ops")
    assert code == 0 and "aten.addmm" in out and "aten.relu" in out


def test_meta_device_has_no_values(runner: CliRunner) -> None:
    code, out, _ = _run(runner, "-v", "swiglu", "-d", "8192", "--d-ff", "28672", "-b", "8", "-s", "4096", "--device", "meta")
    assert code == 0 and "n/a on the meta device" in out and "(8, 4096, 28672)" in out


def test_block_shows_attention_and_the_ratio(runner: CliRunner) -> None:
    code, out, _ = _run(runner, "--block", "-d", "64", "--n-heads", "4", "--n-kv-heads", "2", "--norm", "rmsnorm", "--pre-norm")
    assert code == 0
    assert "attn.scores" in out and "ffn.up_proj" in out and "FFN / attention" in out and "pre-norm RMSNorm" in out


@pytest.mark.parametrize("variant", ["moe", "soft_moe", "geglu", "sparse"])
def test_check_passes(runner: CliRunner, variant: str) -> None:
    experts = ["--experts", "3"] if variant in ("moe", "soft_moe") else []  # an option only a mixture reads
    code, out, _ = _run(runner, "-v", variant, "-d", "32", *experts, "--check")
    assert code == 0 and "max relative error" in out


def test_failed_check_exits_1_with_one_line(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    from ffn_cli.tracing import check as trace_module

    monkeypatch.setitem(trace_module.CHECK_THRESHOLDS, "float32", 0.0)
    code, _, err = _run(runner, "-d", "32", "--check")
    assert code == 1 and err.startswith("error: --check failed") and err.count("\n") == 1


def test_json_fields(runner: CliRunner) -> None:
    code, out, _ = _run(runner, "-v", "moe", "-d", "32", "--experts", "4", "--json", "--check", "--ops")
    assert code == 0
    data = json.loads(out)
    for key in ("steps", "output_shape", "total_flops", "matmul_flops", "max_rel_error", "ops"):
        assert key in data
    step = data["steps"][0]
    for key in ("name", "op", "input_shapes", "output_shape", "flops", "params", "stats"):
        assert key in step
    assert data["output_shape"] == [2, 5, 32]
    assert sum(s["flops"] for s in data["steps"]) == data["total_flops"]
    assert sum(o["matmul_flops"] for o in data["ops"]) == data["matmul_flops"]
    assert 0 <= data["max_rel_error"] < 1e-4


def test_json_and_table_read_the_same_result() -> None:
    result = trace(FFNSpec(variant="swiglu", d_model=32), device="meta")
    data = trace_data(result)
    text = _render(spec=FFNSpec(variant="swiglu", d_model=32), device="meta")
    assert f"{data['total_flops']:,}" in text and f"{data['total_params']:,}" in text
    assert data["max_rel_error"] is None and all(s["stats"] is None for s in data["steps"])


@pytest.mark.parametrize(
    "args",
    [
        ["--mode", "test"],
        ["--variant", "nope"],
        ["--d-model", "0"],
        ["--values", "100"],
        ["--dtype", "int8"],
        ["--device", "tpu"],
        ["--block", "--norm", "batchnorm"],
        ["--block", "--n-kv-heads", "3"],
        ["--check", "--device", "meta"],
        ["--top-k", "9", "-v", "moe"],
        ["--dropout", "1.5"],
        ["--d-model", "abc"],
    ],
)
def test_bad_options_exit_2_with_one_line(runner: CliRunner, args: list[str]) -> None:
    code, _, err = _run(runner, *args)
    assert code == 2, err
    assert err.startswith("error:") and err.count("\n") == 1 and "Traceback" not in err


def test_absurd_sizes_are_refused_with_a_hint(runner: CliRunner) -> None:
    code, _, err = _run(runner, "-v", "swiglu", "-d", "8192", "--d-ff", "28672", "-b", "8", "-s", "65536")
    assert code == 1 and "--device meta" in err and err.count("\n") == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_without_cuda_is_one_line(runner: CliRunner) -> None:
    code, _, err = _run(runner, "--device", "cuda")
    assert code == 1 and "CUDA is not available" in err


@pytest.mark.cuda
def test_cuda_trace_through_the_cli(runner: CliRunner) -> None:
    code, out, _ = _run(runner, "-v", "swiglu", "-d", "64", "--device", "cuda", "--dtype", "bfloat16", "--check", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["device"].startswith("cuda") and data["dtype"] == "bfloat16" and data["check_passed"] is True
    assert data["output_shape"] == [2, 5, 64] and data["matmul_flops"] > 0


def test_zero_init_output_gives_a_zero_output(runner: CliRunner) -> None:
    result = runner.invoke(app, ["trace", "--variant", "swiglu", "--d-model", "32", "--zero-init-output", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    last = data["steps"][-1]
    assert last["stats"]["max"] == 0 and last["stats"]["min"] == 0
    assert data["spec"]["zero_init_output"] is True


def test_kept_for_backward_says_what_the_estimate_leaves_out(runner: CliRunner) -> None:
    """Train mode keeps the dropout mask (one element per hidden unit and token: a bool, or the
    float noise on CPU) beyond the eval-mode estimate; a block keeps more than its FFN."""
    spec = FFNSpec(variant="swiglu", d_model=64, dropout=0.1)
    result = trace(spec, mode="train")
    extra = result.saved_bytes - result.activation_bytes_estimate
    assert extra in (result.tokens * spec.hidden * size for size in (1, 4))
    _, out, _ = _run(runner, "-v", "swiglu", "-d", "64", "--dropout", "0.1", "--mode", "train")
    assert "without the dropout mask train mode keeps" in " ".join(out.split())
    _, block, _ = _run(runner, "--block", "-d", "64", "--device", "meta")
    assert "(the whole block: attention, norms and FFN)" in " ".join(block.split()) and "for the FFN alone" in block


def test_meta_moe_says_how_the_tokens_were_spread(runner: CliRunner) -> None:
    """2 × 5 tokens, top-2 of 8: 20 pairs, 3 for the first 4 experts and 2 for the others."""
    _, out, _ = _run(runner, "-v", "moe", "--device", "meta")
    text = " ".join(out.split())
    assert "the 20 (token, expert) pairs are spread as evenly as they go" in text
    assert "tokens per expert: 3, 3, 3, 3, 2, 2, 2, 2." in text
    _, dense, _ = _run(runner, "-v", "swiglu", "--device", "meta")
    assert "Routing" not in dense


def test_where_the_dtype_came_from_is_said_in_chinese(runner: CliRunner) -> None:
    # The header's "(default: the config names none)" was English in zh output; --json keeps the English key.
    result = runner.invoke(app, ["--lang", "zh", "trace", "--preset", "llama-3-8b", "--device", "meta"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "dtype float32 (默认：配置未声明)" in result.stdout
    assert "config names none" not in result.stdout
    data = json.loads(runner.invoke(app, ["trace", "--preset", "llama-3-8b", "--device", "meta", "--json"], env=WIDE).stdout)
    assert data["model"]["dtype_from"] == "default: the config names none"
