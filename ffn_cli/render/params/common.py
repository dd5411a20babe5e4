"""What the `ffn params` renderers share: the table they draw, percentages and ratios as printed,
an attention as JSON, a name marked for translation shown in the reader's language."""

from __future__ import annotations

from typing import Any

from ffn_cli.attention import AnyAttention
from ffn_cli.i18n import Message, _, shown
from ffn_cli.models.layer import attention_formula
from ffn_cli.render.fit import Cell, Col, FitTable

__all__ = ["attention_data", "pct", "ratio", "share", "table", "word"]


def table(title: Cell | None, columns: list[Col], rows: list[Any], **options: Any) -> FitTable:
    """A compact table (header rule, no vertical borders) fitted to the terminal's width."""
    return FitTable(title, columns, rows, **options)


def pct(part: float, whole: float) -> str:
    """part / whole in percent, one decimal ('–' for a zero whole)."""
    return f"{100 * part / whole:.1f}%" if whole else "–"


def share(part: int, whole: int) -> float | None:
    """part / whole, the fraction the tables print in percent."""
    return part / whole if whole else None


def ratio(value: float) -> str:
    return f"{value:.3f}×" if value < 10 else f"{value:.2f}×"


def word(text: str) -> str:
    """A name the accounting marked with N_() (or built as a Message), in the current language."""
    return shown(text) if isinstance(text, Message) else _(text)


def attention_data(a: AnyAttention) -> dict[str, Any]:
    return a.shape_data() | {
        "n_heads": a.n_heads,
        "n_kv_heads": a.n_kv_heads,
        "head_dim": a.head_dim,
        "qkv_bias": a.qkv_bias,
        "o_bias": a.o_bias,
        "params": a.params,
        "param_formula": attention_formula(a),
        "projection_flops_per_token": a.projection_flops_per_token(),
    }
