"""What one FFN's and one model's presenters both show when it was asked: --explain's block and
FLOPs over --seq-len, each loading its renderer only then."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType

__all__ = ["explain_block_view", "explained", "over_lengths"]


def explain_block_view(block: Any) -> RenderableType | None:
    """--explain's block, or nothing when it was not asked."""
    if block is None:
        return None
    from ffn_cli.render.params.explain import explain_view

    return explain_view(block)


def explained(block: Any) -> dict[str, Any]:
    """--explain's block in the `--json`, when asked."""
    return {"explain": block.data()} if block is not None else {}


def over_lengths(stack: Any, rows: Any) -> dict[str, Any]:
    """FLOPs over --seq-len in the `--json`, when asked."""
    from ffn_cli.render.seq_flops import seq_flops_data

    return {"flops_over_seq_len": seq_flops_data(stack, rows)} if rows else {}
