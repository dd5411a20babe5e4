"""A model's own FFN module traced on meta (`trace.foreign`), as a table or as JSON."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_count, fmt_shape
from ffn_cli.render.literal import visible

if TYPE_CHECKING:
    from ffn_cli.trace.foreign import ForeignTrace

__all__ = ["foreign_data", "foreign_view"]


def foreign_view(t: ForeignTrace) -> RenderableType:
    head = Text(visible(f"{t.name} · {t.model_type} · layer {t.layer}: {t.module_path} ({t.module_class})"), style="bold")
    how = Text(
        f"built by transformers ({t.model_class}) on the meta device: shapes and FLOPs, no values · "
        f"input {fmt_shape(t.input_shape)} → {fmt_shape(t.output_shape)}"
    )
    columns = [Col("step", "fixed"), Col("operation", "text", drop=2), Col("input → output", "fixed", drop=1), Col("params"), Col("FLOPs")]
    rows: list[Any] = [
        [
            Text(s.name),
            Text(s.operation),
            Text(", ".join(fmt_shape(x) for x in s.input_shapes) + f"\n→ {fmt_shape(s.output_shape)}"),
            fmt_count(s.params) if s.params else "",
            fmt_count(s.flops),
        ]
        for s in t.steps
    ]
    rows.append(None)
    rows.append([Text("total"), Text(""), Text(""), fmt_count(t.params), fmt_count(t.matmul_flops + t.elementwise_flops)])
    table = FitTable("Shape flow of the model's own FFN module", columns, rows)
    notes = [Text(f"note: {n}", style="dim") for n in t.notes]
    flops = Text(f"FLOPs: {fmt_count(t.matmul_flops)} matmul (2·m·n·k) + {fmt_count(t.elementwise_flops)} elementwise")
    return Group(
        Panel(Group(head, how), title="ffn trace · a model ffn has no reader for", title_align="left", expand=False), table, flops, *notes
    )


def foreign_data(t: ForeignTrace) -> dict[str, Any]:
    data = asdict(t)
    data["steps"] = [asdict(s) | {"flops": s.flops} for s in t.steps]
    data["matmul_flops"], data["elementwise_flops"] = t.matmul_flops, t.elementwise_flops
    data["device"], data["counted_by"] = "meta", "transformers"
    return data
