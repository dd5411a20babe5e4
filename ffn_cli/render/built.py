"""A model counted by building it with transformers: the parts table, the rule that sorted
them, and the JSON of the same fields."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.accounting import DTYPE_BYTES
from ffn_cli.models.built import PART_NAMES, BuiltModel, RoutedExperts
from ffn_cli.models.count import training_memory
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_count
from ffn_cli.render.params import _pct, _table, _training_data, memory_rows

__all__ = ["built_data", "built_view", "how_counted"]

# At most this many module names per row in the table; JSON carries them all.
_SHOWN_MODULES = 3


def how_counted(m: BuiltModel) -> str:
    """The sentence that says plainly where the numbers come from."""
    cached = (
        f" These counts are transformers {m.transformers_version}'s build of this config, read back from ffn's cache "
        "(--no-cache builds it again)."
        if m.cached_from
        else ""
    )
    return (
        f"Counted by building {m.model_class} from the config with transformers on the meta device: no weights, "
        f"no remote code.{cached} The total is what parameters() counts (tied weights once); "
        "the parts are attributed by module name and type, by this rule:"
    )


def _routed_data(r: RoutedExperts) -> dict[str, Any]:
    return {
        "part": PART_NAMES[r.kind],
        "modules": list(r.modules),
        "containers": r.containers,
        "experts": r.experts,
        "top_k": r.top_k,
        "top_k_key": r.top_k_key,
        "layer_top_k": list(r.layer_top_k) or None,
        "params": r.params,
        "active_params": r.active_params,
        "unknown_because": r.unknown_because,
    }


def built_data(m: BuiltModel, dtype: str = "bfloat16") -> dict[str, Any]:
    total = m.total_params
    return {
        "model": m.name,
        "model_type": m.model_type,
        "source": m.source,
        "counted_by": "transformers",
        "cached_from": m.cached_from or None,
        "model_class": m.model_class,
        "transformers_version": m.transformers_version,
        "device": "meta",
        "how": how_counted(m),
        "config": {"n_layers": m.n_layers, "d_model": m.d_model, "vocab_size": m.vocab_size},
        "parts": [
            {"name": p.name, "kind": p.kind, "params": p.params, "active_params": p.active_params, "modules": list(p.modules)}
            for p in m.parts
        ],
        "rule": [{"part": PART_NAMES[kind], "kind": kind, "rule": text} for kind, text in m.rules],
        "routed_experts": [_routed_data(r) for r in m.routed],
        "total_params": total,
        "active_params": m.active_params,
        "embedding_params": m.params_of("embedding"),
        "attention_params": m.params_of("attention"),
        "ffn_params": m.params_of("ffn"),
        "norm_params": m.params_of("norm"),
        "head_params": m.params_of("head"),
        "other_params": m.params_of("other"),
        "ffn_share": m.params_of("ffn") / total if total else None,
        "other_share": m.params_of("other") / total if total else None,
        "weight_bytes": {d: total * DTYPE_BYTES[d] for d in DTYPE_BYTES},
        "training_memory": _training_data(training_memory(total, dtype)),
        "notes": list(m.notes),
    }


def _modules(names: tuple[str, ...]) -> str:
    shown = ", ".join(names[:_SHOWN_MODULES])
    more = len(names) - _SHOWN_MODULES
    return shown + (f", … {more} more" if more > 0 else "")


def _title(m: BuiltModel) -> str:
    text = f"{m.name} · {m.model_type}"
    if m.n_layers is not None:
        text += f" · {m.n_layers} layers"
    if m.d_model is not None:
        text += f" · d_model {m.d_model:,}"
    if m.vocab_size is not None:
        text += f" · vocab {m.vocab_size:,}"
    return text


def _parts_table(m: BuiltModel) -> FitTable:
    total, active = m.total_params, m.active_params
    rows: list[Any] = []
    for p in m.parts:
        params = fmt_count(p.params) + (f"\n[dim]active {fmt_count(p.active_params)}[/]" if p.inactive_params else "")
        rows.append([p.name, params, _pct(p.params, total), f"[dim]{_modules(p.modules) or '–'}[/]"])
    rows.append(None)
    shown_active = f"\n[dim]active {fmt_count(active)}[/]" if active is not None and active != total else ""
    shown_active = "\n[dim]active unknown[/]" if active is None else shown_active
    rows.append(["[bold]total[/]", f"[bold]{fmt_count(total)}[/]{shown_active}", "100%", f"[dim]built as {m.model_class}[/]"])
    columns = [Col("part", "fixed"), Col("params"), Col("%", drop=2), Col("modules", "text", drop=1)]
    return _table(_title(m), columns, rows)


def _rule_table(m: BuiltModel) -> FitTable:
    rows = [[PART_NAMES[kind], f"[dim]{text}[/]"] for kind, text in m.rules]
    return _table("", [Col("part", "fixed"), Col("rule", "text")], rows, show_header=False)


def _routed_line(r: RoutedExperts) -> list[str]:
    where = f"{r.containers} × {_modules(r.modules)}"
    if r.active_params is None:
        return ["active experts", "unknown", f"{r.unknown_because}; routed experts in {where}"]
    return [
        "active experts",
        fmt_count(r.active_params),
        f"of {fmt_count(r.params)}: {r.top_k_text} ({r.top_k_key}) of {r.experts}, in {where}",
    ]


def _summary(m: BuiltModel, dtype: str) -> FitTable:
    total = m.total_params
    rows: list[Any] = [_routed_line(r) for r in m.routed]
    if m.routed:
        active = m.active_params
        how = f"{_pct(active, total)} of the total" if active is not None else "needs the experts per token"
        rows += [["active per token", fmt_count(active) if active is not None else "unknown", how], None]
    rows += memory_rows(total, dtype)
    return _table("summary", [Col("what", "fixed"), Col("value"), Col("how", "text")], rows, show_header=False)


def built_view(m: BuiltModel, dtype: str = "bfloat16") -> RenderableType:
    notes = [Text(f"note: {n}", style="dim") for n in m.notes]
    return Group(_parts_table(m), Text(""), Text(how_counted(m)), _rule_table(m), *notes, Text(""), _summary(m, dtype))
