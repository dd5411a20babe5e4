"""`ffn trace --explain`: why each step is there, under the steps, in English and in Chinese.

The numbers an explanation names (d_model, d_ff, experts, k) are held against the shapes of the
weights the built module holds, as --json lists them, never against the spec that wrote them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

import ffn_cli
from ffn_cli.cli.ffn_app import app
from ffn_cli.i18n import set_language
from ffn_cli.spec import FFNSpec
from ffn_cli.variants import VARIANTS

pytestmark = pytest.mark.usefixtures("one_thread")

ARTICLES = "tests/data/articles.py"
TITLE = {"en": "Why each step is there", "zh": "每一步的作用"}


def _run(*args: str, width: int = 120) -> Any:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


def _json(*args: str) -> dict[str, Any]:
    return json.loads(_run(*args, "--json"))


def _why(text: str, lang: str) -> dict[str, str]:
    """The explanations table: each step's name and its explanation, its wrapped lines joined."""
    lines = text.split("\n")
    start = lines.index(TITLE[lang]) + 3  # title, header, rule
    rows: dict[str, str] = {}
    name = ""
    for line in lines[start:]:
        if not line.strip():
            break
        head, *rest = line.split(maxsplit=2)
        if head.isdigit() or head == "…":
            name = rest[0]
            rows[name] = rest[1] if len(rest) > 1 else ""
        else:
            rows[name] += ("" if lang == "zh" else " ") + line.strip()
    return rows


def _weight(data: dict[str, Any], step: str) -> list[int]:
    s = next(s for s in data["steps"] if s["name"] == step)
    return next(p["shape"] for p in s["params"] if p["name"].endswith("weight"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_step_is_explained_below_the_steps_table(lang: str) -> None:
    args = ("--lang", lang, "trace", "-d", "96", "--d-ff", "320", "--explain")
    text = _run(*args, width=80)
    data = _json(*args)
    why = _why(text, lang)
    assert list(why) == [s["name"] for s in data["steps"]]
    assert text.index(TITLE[lang]) > text.index("up_proj")  # after the steps table
    assert all(len(line) <= 80 for line in text.splitlines())
    d_ff, d_model = _weight(data, "up_proj")  # nn.Linear's (out, in)
    assert (d_model, d_ff) == (96, 320)
    up, down = why["up_proj"], why["down_proj"]
    assert f"d_model {d_model}" in up and f"d_ff {d_ff}" in up and f"d_ff {d_ff}" in down and f"d_model {d_model}" in down
    if lang == "en":
        assert "widens" in up and "narrows" in down and "(xW₁)W₂ = x(W₁W₂)" in why["activation"]
        assert "identity in eval mode" in why["dropout"] and "1/(1−p)" in why["dropout"]
    else:
        assert "升维" in up and "降维" in down and "激活函数" in why["activation"] and "(xW₁)W₂ = x(W₁W₂)" in why["activation"]
        assert "评估模式" in why["dropout"] and "1/(1−p)" in why["dropout"]


def test_a_gated_and_a_routed_variant_say_what_their_own_steps_do() -> None:
    args = ("trace", "-v", "moe", "--experts", "6", "--top-k", "3", "-d", "64", "--d-ff", "96", "--explain")
    why, data = _why(_run(*args), "en"), _json(*args)
    experts = _weight(data, "router")[0]  # (E, d_model)
    assert f"each of the {experts} experts" in why["router"]
    assert "keeps the 3 experts" in why["top_k"] and f"not {experts}" in why["top_k"]
    d_ff = _weight(data, "experts.0")[0]
    assert f"swiglu FFN of d_ff {d_ff}" in why["experts.0"] and "multiplies" not in why["experts.0"]
    gated = _why(_run("trace", "-v", "swiglu", "--explain"), "en")
    assert "elementwise" in gated["multiply"] and "gate" in gated["activation"]


def test_your_module_gets_explanations_by_what_each_step_is() -> None:
    """Article 001's TransformerFFN has no spec: its steps are explained by their modules and ops."""
    module = f"{ARTICLES}:TransformerFFN(96, 320)"
    for lang in ("en", "zh"):
        args = ("--lang", lang, "trace", "--module", module, "--explain")
        why, data = _why(_run(*args, width=80), lang), _json(*args)
        up, down = _weight(data, "linear1"), _weight(data, "linear2")
        assert list(why) == [s["name"] for s in data["steps"]]
        if lang == "en":
            assert f"widens each token from {up[1]} to {up[0]}" in why["linear1"]
            assert f"narrows each token from {down[1]} back to {down[0]}" in why["linear2"]
            assert why["activation"].startswith("an activation function") and why["dropout"].startswith("dropout:")
        else:
            assert f"从 {up[1]} 维升维到 {up[0]} 维" in why["linear1"] and f"从 {down[1]} 维降维回 {down[0]} 维" in why["linear2"]
            assert why["activation"].startswith("激活函数") and "评估模式" in why["dropout"]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_explains_every_step(variant: str) -> None:
    extra = ["--experts", "4", "--shared-experts", "1"] if variant == "moe" else ["--experts", "4"] if variant == "soft_moe" else []
    data = _json("trace", "-v", variant, "-d", "64", "--device", "meta", "--explain", *extra)
    unexplained = [s["name"] for s in data["steps"] if not s["explanation"]]
    assert not unexplained


def test_json_explanations_are_english_in_both_languages() -> None:
    english = _json("trace", "--explain")
    assert _json("--lang", "zh", "trace", "--explain") == english
    assert english["steps"][0]["explanation"].startswith("the up-projection")
    assert "explanation" not in _json("trace")["steps"][0]


def test_explain_with_ops_is_refused_in_one_line() -> None:
    result = CliRunner().invoke(app, ["trace", "--explain", "--ops"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "--explain" in result.stderr


def test_the_api_explains_too() -> None:
    result = ffn_cli.trace(FFNSpec(d_model=64), explain=True)
    assert "Why each step is there" in str(result) and "Why each step is there" not in str(ffn_cli.trace(FFNSpec(d_model=64)))
    assert all(s["explanation"] for s in result.to_dict()["steps"])
    set_language("zh")
    assert "每一步的作用" in str(result)


def test_the_backward_steps_are_explained_by_what_autograd_ran() -> None:
    args = ("trace", "-v", "swiglu", "--backward", "--checkpoint", "--explain")
    text, data = _run(*args), _json(*args)
    table = text[text.index("What each backward step computes") :].split("\n\n")[0]
    rows = [line for line in table.splitlines()[3:] if line.split()[:1] and line.split()[0].isdigit()]
    assert len(rows) == len(data["backward_steps"])
    for row, step in zip(rows, data["backward_steps"], strict=True):
        if step["recompute"]:
            assert "forward again" in row
        elif step["weight_grads"]:
            assert "dW = dyᵀ·x" in row, row
    assert "每个反向步骤计算什么" in _run("--lang", "zh", *args)


GATED_MODULE = """
from torch import nn
class Gated(nn.Module):
    def __init__(self, d=64, f=128):
        super().__init__()
        self.gate, self.up, self.down = nn.Linear(d, f), nn.Linear(d, f), nn.Linear(f, d)
        self.act = nn.SiLU()
    def forward(self, x):
        return self.down(self.act(self.gate(x)) * self.up(x))
"""


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v in ("swiglu", "geglu", "reglu")])
def test_a_gated_variants_activation_does_not_claim_a_linear_collapse(variant: str) -> None:
    """Without its activation a gated FFN is the bilinear one, W_down·(W_gate·x ⊙ W_up·x):
    quadratic in x, so nothing collapses into one matrix."""
    why = " ".join(_why(_run("trace", "-v", variant, "-d", "64", "--explain"), "en")["activation"].split())
    assert "collapse" not in why
    assert "would be the bilinear one, h = g ⊙ u: still not linear" in why
    assert "bilinear" in VARIANTS and VARIANTS["bilinear"].formula == "W_down·(W_gate·x ⊙ W_up·x)"


def test_your_gated_modules_activation_is_said_to_shape_a_gate(tmp_path: Any) -> None:
    path = tmp_path / "gated.py"
    path.write_text(GATED_MODULE)
    why = _why(_run("trace", "--module", f"{path}:Gated", "--explain"), "en")
    assert "collapse" not in why["act"] and "on a gate" in why["act"] and "bilinear" in why["act"]


def _backward_rows(*args: str) -> tuple[dict[int, str], list[dict[str, Any]]]:
    """The backward explanations table (row number → its line) and --json's backward steps."""
    text, data = _run(*args, width=240), _json(*args)
    table = text[text.index("What each backward step computes") :].split("\n\n")[0]
    rows = {int(line.split()[0]): line for line in table.splitlines()[3:] if line.split()[:1] and line.split()[0].isdigit()}
    return rows, data["backward_steps"]


def test_each_backward_step_says_what_it_does() -> None:
    """swiglu's backward: the product rule at the multiply, the sum where x's two readers'
    gradients meet (its copy into x.grad with it), and no row that only moves values."""
    rows, steps = _backward_rows("trace", "-v", "swiglu", "-d", "64", "--backward", "--explain")
    assert len(rows) == len(steps) == 6
    for n, step in enumerate(steps, 1):
        ops = {op.split(".")[1] for op in step["aten_ops"]}
        if step["of"] == "up_proj + gate_proj":
            assert ops == {"add", "new_empty_strided", "copy_"}, ops
            assert "adds the gradients up_proj + gate_proj hand back: they read one tensor" in rows[n] and "derivative" not in rows[n]
        elif step["of"] == "multiply":
            assert ops == {"mul"} and "each factor's is dy times the other factor" in rows[n]
        else:
            assert step["flops"] and "copies" not in rows[n] and "no arithmetic" not in rows[n]


def test_each_moe_backward_step_says_what_it_does() -> None:
    """A mixture's backward by its ops: a gather's gradient is put back where it was picked
    from (index_put, scatter), the weighted sum's has a product and a sum over d_model, a
    softmax's and a renormalisation's sum over their row; none is called element by element."""
    rows, steps = _backward_rows("trace", "-v", "moe", "-d", "32", "--experts", "4", "--backward", "--explain")
    seen = set()
    for n, step in enumerate(steps, 1):
        ops = {op.split(".")[1] for op in step["aten_ops"]}
        if ops & {"index_put", "scatter"} and not ops & {"mul", "mm"}:
            seen.add("put back")
            assert "picked back where it was picked from" in rows[n], rows[n]
            assert ("adds what earlier steps handed back" in rows[n]) == ("add" in ops), rows[n]
        elif {"index_select", "mul", "sum"} <= ops and not step["weight_grad_flops"]:
            seen.add("weighted sum")
            assert "the gradient through the weighted sum" in rows[n], rows[n]
        elif ops & {"sum", "_softmax_backward_data"} and not ops & {"mm", "addmm"}:
            seen.add("row")
            assert "row by row" in rows[n] and "element by element" not in rows[n], rows[n]
        elif step["of"].startswith("experts."):  # a whole SwiGLU expert: three weight matrices, silu between
            seen.add("expert")
            assert len(step["weight_grads"]) == 3 and sum(op.endswith(".mm") for op in step["aten_ops"]) == 6
            assert "a module of several layers, as one step" in rows[n], rows[n]
    assert seen == {"put back", "weighted sum", "row", "expert"}


def test_a_norms_backward_is_not_called_a_matmuls() -> None:
    """A LayerNorm's weight gradient is Σ over tokens of dy ⊙ x̂, no matmul (its step has no
    matmul FLOPs): its row says so, and dW = dyᵀ·x stays for the linear layers."""
    rows, steps = _backward_rows("trace", "--block", "-d", "64", "--backward", "--explain")
    norms = [n for n, s in enumerate(steps, 1) if any("layer_norm_backward" in op for op in s["aten_ops"])]
    assert len(norms) == 2
    for n, step in enumerate(steps, 1):
        if n in norms:
            assert not step["weight_grad_flops"] and not step["input_grad_flops"]
            assert "per-feature weights" in rows[n] and "dyᵀ·x" not in rows[n], rows[n]
        elif step["weight_grad_flops"]:
            assert "dW = dyᵀ·x" in rows[n], rows[n]


FUNCTIONAL_DROPOUT = """
import torch.nn.functional as F
from torch import nn


class Drop(nn.Module):
    def __init__(self, d_model=32, d_ff=128, p=0.5, follow_mode=False):
        super().__init__()
        self.fc1, self.fc2, self.p, self.follow_mode = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model), p, follow_mode

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = F.dropout(h, self.p, training=self.training) if self.follow_mode else F.dropout(h, self.p)
        return self.fc2(h)
"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_functional_dropout_that_drops_in_eval_mode_is_named(tmp_path: Any, lang: str) -> None:
    """`F.dropout(h, p)` with no training= drops in eval mode: torch itself shows it (two eval
    forwards differ), and the trace says so in its note and its explanation, not "the identity"."""
    import torch

    path = tmp_path / "drop.py"
    path.write_text(FUNCTIONAL_DROPOUT)
    namespace: dict[str, Any] = {}
    exec(FUNCTIONAL_DROPOUT, namespace)
    module, x = namespace["Drop"]().eval(), torch.randn(2, 5, 32)
    assert not torch.equal(module(x), module(x))  # the second path: it does drop
    args = ("--lang", lang, "trace", "--module", f"{path}:Drop", "--explain")
    text = _run(*args, width=100)
    why, data = _why(text, lang), _json(*args)
    dropout = next(s for s in data["steps"] if s["name"] == "dropout")
    assert dropout["stats"]["zeros"] > 0 and dropout["note"] == "still drops in eval mode: F.dropout without training=self.training"
    if lang == "en":
        assert why["dropout"].startswith("dropout that still drops in eval mode") and "training=self.training" in why["dropout"]
        assert "still drops in eval mode" in text
    else:
        assert why["dropout"].startswith("评估模式下仍在丢弃的 dropout") and "评估模式下仍在丢弃" in text
    followed = _why(_run("--lang", lang, "trace", "--module", f"{path}:Drop(follow_mode=True)", "--explain", width=100), lang)
    assert "dropout" not in followed  # F.dropout(…, training=False) hands its input on: no op, no step


def test_a_split_says_it_splits_and_whose_values_its_row_shows() -> None:
    """A fused gate/up projection split by chunk: the step says it splits, not "a change of
    layout", and that its values row is the first part's (the recorder's stats of a split are
    its first output's)."""
    module = "tests/data/module_styles.py:FusedSwiGLU"
    for lang, said in (("en", "splits one tensor into parts"), ("zh", "沿一个维度把张量拆成几部分")):
        why = _why(_run("--lang", lang, "trace", "--module", module, "--explain", width=200), lang)
        assert why["chunk"].startswith(said), why["chunk"]
