"""The errors a learner meets first each say the fix, in one line."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ffn_cli.cli import app

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"
MY_FFN = EXAMPLES / "my_ffn.py"


def _error(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    lines = [line for line in result.stderr.splitlines() if line.startswith(("error:", "错误："))]
    assert len(lines) == 1, result.output
    return result.exit_code, lines[0]


def test_an_unquoted_module_call_is_told_to_quote() -> None:
    # The shell split `--module my_ffn.py:TransformerFFN(512, 2048)` at its space.
    code, line = _error("trace", "--module", f"{MY_FFN}:TransformerFFN(512,", "2048)")
    assert code == 2
    assert f"the shell split --module's value at its spaces: quote it, --module '{MY_FFN}:TransformerFFN(512, 2048)'" in line


def test_a_wrong_width_names_the_modules_width() -> None:
    code, line = _error("trace", "--module", f"{MY_FFN}:TransformerFFN(512, 2048)", "--d-model", "256")
    assert code == 1
    assert line.endswith("; the module reads d_model 512 (from linear1.in_features): give --d-model 512, or drop it")


def test_a_negative_width_is_out_of_range_not_a_non_integer() -> None:
    code, line = _error("trace", "--d-model", "-5")
    assert (code, line) == (2, "error: --d-model -5: must be an integer in [1, 16,777,216]")


def test_a_missing_argument_is_said_in_chinese() -> None:
    code, line = _error("--lang", "zh", "trace", "--module", f"{MY_FFN}:TransformerFFN(512)")
    assert code == 2 and "missing" not in line and "缺少必需的参数：'d_ff'" in line


def _decode_caption(preset: str) -> str:
    result = CliRunner().invoke(app, ["params", "--preset", preset, "--gpu", "h100", "--phase", "decode"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout.split("what decoding keeps per sequence", 1)[1]


def test_a_dense_models_decode_state_says_nothing_of_windows() -> None:
    # Llama 2 has no sliding window (config.json: no sliding_window), so no sentence may speak of one.
    caption = _decode_caption("llama-2-7b")
    assert "attention keeps K and V of every token before the new one." in caption
    assert "window" not in caption


def test_a_windowed_models_decode_state_says_what_its_window_keeps() -> None:
    # Gemma 2 alternates sliding-window (4,096) and full attention layers.
    caption = " ".join(_decode_caption("gemma-2-9b").split())
    assert "A layer with a window of w tokens keeps only the w − 1 latest." in caption


ROUTED = """
import torch
from torch import nn
class Routed(nn.Module):
    def __init__(self, d=32, f=64, e=4):
        super().__init__()
        self.router = nn.Linear(d, e, bias=False)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(d, f), nn.ReLU(), nn.Linear(f, d)) for _ in range(e))
    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        choice = self.router(flat).argmax(-1)
        out = torch.zeros_like(flat)
        for i, expert in enumerate(self.experts):
            picked = torch.nonzero(choice == i).squeeze(-1)  # which tokens: known only from the values
            out[picked] = expert(flat[picked])
        return out.reshape(x.shape)

def qwen3_moe_block():
    from transformers import Qwen3MoeConfig
    from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock
    return Qwen3MoeSparseMoeBlock(Qwen3MoeConfig(hidden_size=64, moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2))
"""


def test_a_module_that_routes_by_value_on_meta_is_told_why(tmp_path: Path) -> None:
    """Routing picks tokens by their values; meta tensors hold none. That is the reason to
    give, with or without --d-model, never a request for the width."""
    path = tmp_path / "routed.py"
    path.write_text(ROUTED)
    for call, name in (("Routed()", "Routed"), ("qwen3_moe_block()", "Qwen3MoeSparseMoeBlock")):
        for width in ([], ["--d-model", "64" if name != "Routed" else "32"]):
            code, line = _error("trace", "--module", f"{path}:{call}", "--device", "meta", *width)
            assert code == 2
            assert line == (
                f"error: --device meta: {name} routes by value (its forward calls nonzero): which tokens go where "
                "depends on the values, and meta tensors hold none; trace it on --device cpu"
            )
