"""What a row holds beside its parts is said by module, each once: a weight and its bias are one
module's, a module's children are listed under it, a part-of-a-tensor note is kept and said in the
reader's language."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.i18n import Message, set_language
from ffn_cli.models.tensor_notes import modules_said

runner = CliRunner()


@pytest.fixture
def chinese():
    set_language("zh")
    yield
    set_language("en")


def test_a_modules_tensors_are_said_once_under_its_name() -> None:
    names = ["indexer.wq_b.weight", "indexer.wk.weight", "indexer.k_norm (weight)", "indexer.k_norm (bias)", "indexer.weights_proj.weight"]
    assert modules_said(names) == ["indexer (wq_b, wk, k_norm, weights_proj)"]
    hc = ["attn_hc.fn", "attn_hc.base", "attn_hc.scale", "ffn_hc.fn", "ffn_hc.base", "ffn_hc.scale"]
    assert modules_said(hc) == ["attn_hc (fn, base, scale)", "ffn_hc (fn, base, scale)"]


def test_a_lone_child_a_deep_path_and_a_noted_part_keep_their_paths() -> None:
    names = ["router.classifier.weight (zero experts' rows)", "q_proj.weight (output gate half)", "gate.weight", "gate.bias"]
    names += ["a.b.c.weight", "x.y"]
    assert modules_said(names) == ["router.classifier (zero experts' rows)", "q_proj (output gate half)", "gate", "a.b.c", "x.y"]


def test_the_words_are_chinese_in_chinese(chinese) -> None:  # type: ignore[no-untyped-def]
    names = ["q_proj.weight (output gate half)", "attn_hc.fn", "attn_hc.base"]
    said = [m.shown() if isinstance(m, Message) else m for m in modules_said(names)]
    assert said == ["q_proj（输出门那一半）", "attn_hc（fn、base）"]


def test_the_parts_table_names_a_layers_tensors_by_module() -> None:
    """Qwen3.5's attention holds its q_proj's gate half beside its projections: the row names the module, not its .weight."""
    result = runner.invoke(app, ["params", "--preset", "qwen3.5-27b", "--json"])
    assert result.exit_code == 0, result.output
    text = runner.invoke(app, ["params", "--preset", "qwen3.5-27b"], env={"COLUMNS": "160"}).stdout
    assert "+ q_proj (output gate half)" in text and "q_proj.weight" not in text
    assert json.loads(result.stdout)["attention"]["extra_params"] > 0
