"""`--reference`: the user's module named as the registry FFN it computes.

The second path is this file's own NumPy: each expected formula is written out here from the
module's weights (not ffn's reference), and the module's output must agree with it to the
error `--reference` reports."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from rich.cells import cell_len
from torch import nn
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli import app
from ffn_cli.errors import FFNError
from ffn_cli.tracing.any_module import trace_module
from tests.data import articles, module_styles

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).numpy()


def _gelu(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))


def _gelu_tanh(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))


def _silu(z: np.ndarray) -> np.ndarray:
    return z / (1 + np.exp(-z))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z))


class LlamaOrder(nn.Module):
    """SwiGLU as Meta's reference code writes it: w1 the gate, w2 down, w3 up."""

    def __init__(self, d: int = 32, f: int = 48) -> None:
        super().__init__()
        self.w1, self.w2, self.w3 = nn.Linear(d, f, bias=False), nn.Linear(f, d, bias=False), nn.Linear(d, f, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class UpGatedWrongWay(LlamaOrder):
    """The gate and the up swapped inside the product: silu of the wrong projection."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) + self.w3(x))  # a sum where the product belongs


# Each module, the variant it computes, and its formula in this file's own NumPy.
Expected = Callable[[nn.Module, np.ndarray], np.ndarray]
CASES: dict[str, tuple[Callable[[], nn.Module], str, Expected]] = {
    "article 001 TransformerFFN": (
        lambda: articles.TransformerFFN(32, 128),
        "relu",
        lambda m, x: np.maximum(x @ _np(m.linear1.weight).T + _np(m.linear1.bias), 0) @ _np(m.linear2.weight).T + _np(m.linear2.bias),
    ),
    "article 002 FFN (gelu)": (
        lambda: articles.FFN(32, 128),
        "gelu",
        lambda m, x: _gelu(x @ _np(m.linear1.weight).T + _np(m.linear1.bias)) @ _np(m.linear2.weight).T + _np(m.linear2.bias),
    ),
    "article 002 GLUFFN (F.glu: a·σ(b), up first)": (
        lambda: articles.GLUFFN(32, 48),
        "glu",
        lambda m, x: _glu(x @ _np(m.linear1.weight).T + _np(m.linear1.bias)) @ _np(m.linear2.weight).T + _np(m.linear2.bias),
    ),
    "GPT-2's Conv1D, weights stored (in, out)": (
        lambda: module_styles.GPT2MLP(32, 128),
        "gelu_tanh",
        lambda m, x: _gelu_tanh(x @ _np(m.c_fc.weight) + _np(m.c_fc.bias)) @ _np(m.c_proj.weight) + _np(m.c_proj.bias),
    ),
    "fused gate_up, chunked": (
        lambda: module_styles.FusedSwiGLU(32, 48),
        "swiglu",
        lambda m, x: _swiglu_fused(m, x),
    ),
    "Meta's w1, w2, w3 order": (
        LlamaOrder,
        "swiglu",
        lambda m, x: (_silu(x @ _np(m.w1.weight).T) * (x @ _np(m.w3.weight).T)) @ _np(m.w2.weight).T,
    ),
}


def _glu(h: np.ndarray) -> np.ndarray:
    a, b = np.split(h, 2, axis=-1)
    return a * _sigmoid(b)


def _swiglu_fused(m: nn.Module, x: np.ndarray) -> np.ndarray:
    gate, up = np.split(x @ _np(m.gate_up.weight).T, 2, axis=-1)
    return (_silu(gate) * up) @ _np(m.down.weight).T


@pytest.mark.parametrize("case", CASES)
def test_each_style_is_named_as_the_variant_it_computes(case: str) -> None:
    make, variant, expected = CASES[case]
    torch.manual_seed(0)
    module = make()
    result = trace_module(module, reference=True, dtype="float64")
    match = result.reference
    assert match is not None and match.matched, match
    assert match.best is not None and match.best.variant == variant
    # The second path: this file's formula on the module's weights, against the module itself.
    x = torch.randn(2, 5, result.module.d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    own = expected(module, _np(x))
    with torch.no_grad():
        np.testing.assert_allclose(own, _np(module.eval()(x)), rtol=0, atol=1e-10)  # eval: the articles' dropout off
    assert match.best.max_rel_error <= 1e-10  # float64: the reference and the module agree to rounding


def test_a_module_in_float32_agrees_to_float32s_rounding() -> None:
    torch.manual_seed(0)
    match = trace_module(articles.TransformerFFN(64, 256), reference=True).reference
    assert match is not None and match.matched and match.dtype == "float32"
    assert 0 < match.best.max_rel_error < 1e-5 and match.threshold == 1e-4  # type: ignore[union-attr]


def test_the_weights_are_placed_as_the_module_holds_them() -> None:
    torch.manual_seed(0)
    glu = trace_module(articles.GLUFFN(32, 48), reference=True).reference
    assert glu is not None and glu.best is not None
    assert dict((own, (name, t, s)) for own, name, t, s in glu.best.placed) == {
        "linear1.weight": ("gate_up_proj.weight", False, True),
        "linear1.bias": ("gate_up_proj.bias", False, True),
        "linear2.weight": ("down_proj.weight", False, False),
        "linear2.bias": ("down_proj.bias", False, False),
    }
    gpt2 = trace_module(module_styles.GPT2MLP(32, 128), reference=True).reference
    assert gpt2 is not None and gpt2.best is not None
    assert {own: t for own, _name, t, _s in gpt2.best.placed} == {
        "c_fc.weight": True,
        "c_fc.bias": False,
        "c_proj.weight": True,
        "c_proj.bias": False,
    }
    llama = trace_module(LlamaOrder(), reference=True).reference
    assert llama is not None and llama.best is not None
    assert [(own, name) for own, name, _t, _s in llama.best.placed] == [
        ("w1.weight", "gate_proj.weight"),
        ("w3.weight", "up_proj.weight"),
        ("w2.weight", "down_proj.weight"),
    ]


def test_a_wrong_module_matches_nothing_and_says_where_outputs_part() -> None:
    torch.manual_seed(0)
    module = UpGatedWrongWay()
    x = torch.randn(2, 5, 32, generator=torch.Generator().manual_seed(0))
    match = trace_module(module, x, reference=True).reference
    assert match is not None and not match.matched and match.best is not None
    token, feature, yours, theirs = match.best.worst
    assert match.best.parted_fraction > 0.5 and abs(yours - theirs) == pytest.approx(match.best.max_abs_error, rel=1e-6)
    with torch.no_grad():
        assert yours == pytest.approx(float(module(x).reshape(-1, 32)[token, feature]), rel=1e-6)


def test_no_layout_holds_a_tied_module() -> None:
    match = trace_module(module_styles.TiedFFN(), reference=True).reference
    assert match is not None and not match.matched and match.best is None and match.tried == 0
    assert match.reason == "no registry FFN has its parameters' shapes ((128, 32))"


def test_reference_needs_values() -> None:
    with pytest.raises(FFNError, match="the meta device holds none"):
        trace_module(articles.TransformerFFN(32, 128).to("meta"), device="meta", reference=True)


def test_the_cli_and_the_api_give_the_same_reference() -> None:
    module = f"{EXAMPLES / 'my_ffn.py'}:TransformerFFN(64, 256)"
    result = CliRunner().invoke(app, ["trace", "--module", module, "--reference", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["reference"]
    assert data["variant"] == "relu" and data["matched"] is True and data["max_abs_error"] < 1e-5
    assert data["closest"]["placed"] == {
        "linear1.weight": "up_proj.weight",
        "linear1.bias": "up_proj.bias",
        "linear2.weight": "down_proj.weight",
        "linear2.bias": "down_proj.bias",
    }
    assert ffn_cli.trace(module, reference=True).to_dict()["reference"] == data


def test_reference_is_for_a_module() -> None:
    result = CliRunner().invoke(app, ["trace", "--variant", "relu", "--reference"])
    assert result.exit_code == 2 and "use it with --module" in result.stderr
    with pytest.raises(FFNError, match="a spec is one"):
        ffn_cli.trace(ffn_cli.FFNSpec(variant="relu", d_model=8), reference=True)


def test_the_text_names_the_variant_at_80_columns() -> None:
    module = f"{EXAMPLES / 'article_002.py'}:GLUFFN(64, 128)"
    result = CliRunner().invoke(app, ["trace", "--module", module, "--reference"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "your GLUFFN is ffn's glu FFN: W_down·(σ(W_gate·x + b_gate) ⊙ (W_up·x + b_up)) + b_down" in text
    assert "linear1.weight → gate_up_proj.weight (halves swapped)" in text


class ReluFFN(nn.Module):
    """relu's layout; `forward_end` is what each case does to the output (its only change)."""

    def __init__(self, d: int = 32, f: int = 64) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(d, f), nn.Linear(f, d)
        self.calls = 0

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return F.relu(self.up(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.hidden(x))


class ComplexOut(ReluFFN):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.down(self.hidden(x))
        return torch.complex(y, y)  # relu's output as the real part, the imaginary part as large


class NaNOut(ReluFFN):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.hidden(x)) * float("nan")


class Flattened(ReluFFN):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.hidden(x)).flatten(1)  # (2, 5, 32) → (2, 160)


class DropsInEval(ReluFFN):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.dropout(self.hidden(x), 0.1))  # no training=self.training: drops in eval too


class DropsInTrainOnly(ReluFFN):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.dropout(self.hidden(x), 0.1, training=self.training))


def test_a_complex_output_is_refused_not_read_as_its_real_part() -> None:
    match = trace_module(ComplexOut(), reference=True).reference
    assert match is not None and match.best is None and not match.matched
    assert match.reason == "its output is complex (complex64), and every registry FFN's is real"


def test_a_nan_output_is_said_to_be_nan() -> None:
    match = trace_module(NaNOut(), reference=True).reference
    assert match is not None and match.best is None
    assert match.reason == f"{2 * 5 * 32} of its {2 * 5 * 32} outputs are NaN or infinite: there is nothing to compare"


def test_an_output_of_another_shape_says_so() -> None:
    match = trace_module(Flattened(), reference=True).reference
    assert match is not None and match.best is None and match.tried > 0
    assert match.reason == "its output's shape (2, 160) is not its input's (2, 5, 32), and every registry FFN gives back the input's shape"


@pytest.mark.parametrize("aten", [False, True])
def test_a_dropout_that_ignores_eval_mode_is_named(aten: bool) -> None:
    match = trace_module(DropsInEval(), reference=True, aten=aten).reference
    assert match is not None and match.best is None
    op = "aten.bernoulli_" if aten else "torch.dropout"
    assert match.reason == (
        f"its forward draws random numbers in eval mode ({op}), so its output changes from run to run "
        "(a dropout without training=self.training keeps dropping in eval mode)"
    )
    fixed = trace_module(DropsInTrainOnly(), reference=True, aten=aten).reference
    assert fixed is not None and fixed.matched and fixed.best is not None and fixed.best.variant == "relu"


def test_the_reference_reuses_an_eval_traces_output() -> None:
    module = ReluFFN()
    match = trace_module(module, reference=True).reference
    assert match is not None and match.matched and match.note == ""
    assert module.calls == 1  # the user's forward ran once: its prints show once
    trained = DropsInTrainOnly()
    match = trace_module(trained, reference=True, mode="train").reference
    assert match is not None and match.matched and trained.calls == 2
    assert (
        match.note == "--reference ran your forward once more, in eval mode, as the trace ran it in train mode: what it prints shows twice"
    )


def test_the_text_says_why_nothing_matches_and_why_the_forward_ran_twice(tmp_path: Path) -> None:
    path = tmp_path / "flattened.py"
    path.write_text(
        "from torch import nn\n"
        "class Flattened(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.up, self.down = nn.Linear(32, 64), nn.Linear(64, 32)\n"
        "    def forward(self, x):\n"
        "        return self.down(self.up(x).relu()).flatten(1)\n"
    )
    module = f"{path}:Flattened()"
    result = CliRunner().invoke(app, ["trace", "--module", module, "--reference", "--mode", "train"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "your Flattened matches no registry FFN: its output's shape (2, 160) is not its input's (2, 5, 32)" in result.stdout
    assert "--reference ran your forward once more, in eval mode" in result.stdout


def test_the_text_says_how_far_the_outputs_differ_in_plain_words(tmp_path: Path) -> None:
    """A relu FFN scaled by 1.01: every output differs by 1% of itself, the largest where the
    output is largest. The sentence says "differ by", names the share past float32's allowance
    and the place, and its numbers are the module's own (a second run of the module)."""
    path = tmp_path / "scaled.py"
    path.write_text(
        "import torch\nfrom torch import nn\n"
        "class Scaled(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.up, self.down = nn.Linear(32, 64), nn.Linear(64, 32)\n"
        "    def forward(self, x):\n"
        "        return self.down(torch.relu(self.up(x))) * 1.01\n"
    )
    result = CliRunner().invoke(app, ["trace", "--module", f"{path}:Scaled", "--reference"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.split("\n") if line.startswith("outputs "))
    assert line.startswith("outputs differ by up to ") and "part by" not in line
    assert "of them by more than float32 allows, the largest at token " in line
    data = json.loads(CliRunner().invoke(app, ["trace", "--module", f"{path}:Scaled", "--reference", "--json"]).stdout)["reference"]
    worst = data["closest"]["worst"]
    assert data["closest"]["variant"] == "relu" and f"token {worst['token']}, feature {worst['feature']}" in line
    assert abs(worst["module"] - worst["reference"] * 1.01) < 1e-5 * abs(worst["module"])


def test_the_chinese_answer_breaks_between_characters(tmp_path: Path) -> None:
    """At 60 columns, the Chinese sentence on how far the outputs differ fills its lines (it
    breaks between characters, not only at spaces, where a run of Chinese would jump whole to
    the next line), and the weights placed are listed with the Chinese comma."""
    path = tmp_path / "scaled.py"
    path.write_text(
        "import torch\nfrom torch import nn\n"
        "class Scaled(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.up, self.down = nn.Linear(32, 64), nn.Linear(64, 32)\n"
        "    def forward(self, x):\n"
        "        return self.down(torch.relu(self.up(x))) * 1.01\n"
    )
    result = CliRunner().invoke(app, ["--lang", "zh", "trace", "--module", f"{path}:Scaled", "--reference"], env={"COLUMNS": "60"})
    assert result.exit_code == 0, result.output
    block = result.stdout[result.stdout.index("输出最多相差") :].split("\n")
    sentence = block[: next(i for i, line in enumerate(block) if line.startswith("权重对应"))]
    assert len(sentence) >= 3 and all(48 <= cell_len(line.rstrip()) <= 60 for line in sentence[:-1]), sentence
    placed = " ".join(block[len(sentence) :]).split("\n\n")[0]
    assert "up.weight → up_proj.weight，up.bias" in " ".join(placed.split()).replace("， ", "，") and ", " not in placed
