"""One Chinese: each term as docs/zh/glossary.md writes it, in the catalog and in what the
commands print, and no English word left in a Chinese run where a translation belongs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ffn_cli.catalog import read_po
from ffn_cli.cli import app

ROOT = Path(__file__).resolve().parent.parent
PO = ROOT / "ffn_cli" / "locale" / "zh" / "LC_MESSAGES" / "ffn.po"
GLOSSARY = ROOT / "docs" / "zh" / "glossary.md"

# What the glossary rejects, and the word it keeps instead.
FORBIDDEN = {
    "词元": "token (不译)",
    # 激活 alone says neither which: active parameters are 激活参数, activations 激活值.
    "激活(?!值|函数|参数|路径|专家)": "激活参数 / 激活值",
    "eval 模式": "评估模式",
    "train 模式": "训练模式",
    "批量": "批大小",
    "潜变量|潜在(?!注意力)": "潜向量 (a latent; 潜在 names only MLA, 潜在注意力)",
}


def _translations() -> list[tuple[str, str]]:
    entries = read_po(PO.read_text(encoding="utf-8"), str(PO))
    return [(e.msgid, text) for e in entries if e.msgid for text in e.msgstr]


@pytest.mark.parametrize("pattern", list(FORBIDDEN))
def test_the_catalog_uses_the_glossary_terms(pattern: str) -> None:
    found = [f"{msgid!r}: {text}" for msgid, text in _translations() if re.search(pattern, text)]
    assert not found, f"{pattern} where the glossary says {FORBIDDEN[pattern]}:\n" + "\n".join(found[:10])


def test_the_glossary_names_each_kept_term() -> None:
    rows = [line for line in GLOSSARY.read_text(encoding="utf-8").split("\n") if line.startswith("| ")]
    for kept in ("激活参数", "激活值", "评估模式", "训练模式", "批大小", "潜向量", "潜空间", "潜在注意力"):
        assert any(kept in row.split("|")[2] for row in rows), kept


def _zh(*args: str, width: int = 120) -> str:
    result = CliRunner().invoke(app, ["--lang", "zh", *args], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_ffn_variants_says_its_families_and_formulas_in_chinese() -> None:
    out = _zh("variants", width=200)
    rows = [line.split() for line in out.split("\n") if line[:1].isalpha() and len(line.split()) > 2]
    families = {row[1] for row in rows if row[0] in ("relu", "swiglu", "moe", "sparse", "xielu")}
    assert families and not families & {"dense", "gated", "moe", "sparse"}, families
    for english in ("m fixed, random", "with learnable", "fixed", "random"):
        assert english not in out


def test_ffn_bench_help_has_no_english_usage_words() -> None:
    out = _zh("bench", "--help")
    assert "[OPTIONS]" not in out and "用法：ffn bench [选项]" in out
    assert "[OPTIONS]" not in _zh("--help") and "COMMAND" not in _zh("--help")


def test_ffn_bench_names_its_cache_mode_in_chinese() -> None:
    tiny = ["-d", "16", "-b", "2", "-s", "4", "--repeats", "3", "--warmup-ms", "0", "--threads", "1"]
    out = _zh("bench", *tiny, "--cache", "hot", width=200)
    assert "热缓存" in out and "cache" not in out and "hot" not in out


@pytest.mark.parametrize("args", [["trace", "--device", "meta"], ["trace", "--device", "meta", "--dropout", "0.1"]])
def test_the_trace_header_says_the_mode_in_chinese(args: list[str]) -> None:
    out = _zh(*args)
    assert "评估模式" in out and "eval" not in out


def test_one_table_tells_active_parameters_from_activations() -> None:
    """Mixtral's parts table counts active parameters, its summary's training memory leaves
    activations out: two words for two things."""
    out = _zh("params", "--preset", "mixtral-8x7b")
    assert "激活参数 12,879,925,248" in out and "激活值另计" in out
    assert not re.search("激活(?!值|函数|参数|路径|专家)", out)


@pytest.mark.parametrize("args", [["trace"], ["trace", "-v", "swiglu", "--backward", "--explain"], ["trace", "-v", "moe"]])
def test_a_chinese_trace_writes_the_full_width_colon(args: list[str]) -> None:
    """Chinese text takes `：` (as the glossary and the rest of the output do), never `: `."""
    out = _zh(*args, width=200)
    assert "形状" in out and "→ (2, 5, 64)：" in _zh("trace", "-d", "64")
    assert not [line for line in out.split("\n") if ": " in line], out


@pytest.mark.parametrize("preset", ["gemma-3-27b", "llama-4-scout", "mistral-small-3.1-24b"])
def test_a_vision_towers_rows_are_said_in_chinese(preset: str) -> None:
    """SigLIP's, Llama 4's and Pixtral's rows name their parts in Chinese; the layer names
    (Conv2d, LayerNorm, MLP) stay as the glossary keeps them."""
    out = _zh("params", "--preset", preset, width=200)
    rows = [line for line in out.split("\n") if "视觉" in line or "注意力 " in line]
    assert rows and "视觉：视觉层" in out
    assert not re.search(r"(?<!·)\b(attention|heads?|biases?|layers|gated|merger|probe)\b(?!·)", out), out  # not 4·seq·heads·head_dim


def test_the_attention_formula_says_its_words_in_chinese() -> None:
    """--explain's attention formula keeps its symbols and says its words in Chinese: Qwen3's q/k
    norms, gpt-oss's sinks a head, a router's bias in the MoE row."""
    qwen = _zh("params", "--preset", "qwen3-8b", "--explain", width=200)
    assert "2·d·q + 2·d·kv + q/k 归一化 = " in qwen and "norms" not in qwen
    gpt = _zh("params", "--preset", "gpt-oss-120b", "--explain", width=200)
    assert "+ 头数 = " in gpt and "+ router 的偏置" in gpt


def test_a_gpu_rows_note_is_said_in_chinese() -> None:
    """The A10G has no rates: the line in place of its roofline gives its row's note in Chinese."""
    out = _zh("params", "--preset", "llama-3.1-8b", "--gpu", "a10g", width=200)
    assert "没有厂商数据手册给出 A10G 的峰值算力" in out and "no vendor datasheet" not in out
    tiny = ["-d", "16", "-b", "2", "-s", "4", "--repeats", "3", "--warmup-ms", "0", "--threads", "1"]
    bench = _zh("bench", *tiny, "--gpu", "a10g", width=200)
    assert "没有厂商数据手册给出 A10G 的峰值算力" in bench and "no vendor datasheet" not in bench
