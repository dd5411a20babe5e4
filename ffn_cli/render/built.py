"""A model counted by building it with transformers: the parts table, the rule that sorted
them, and the JSON of the same fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.accounting import DTYPE_BYTES
from ffn_cli.configs.built import PART_NAMES, BuiltLayout, BuiltModel, RoutedExperts
from ffn_cli.i18n import N_, Message, _, shown
from ffn_cli.models.count import training_memory
from ffn_cli.render.fit import Col, FitTable, Wide
from ffn_cli.render.format import fmt_count
from ffn_cli.render.literal import literal, visible
from ffn_cli.render.params.common import pct, table
from ffn_cli.render.params.model import active_range_rows, memory_rows, training_data

__all__ = ["built_data", "built_view", "how_counted", "layout_data", "layout_view"]

# At most this many module names per row in the table; JSON carries them all.
_SHOWN_MODULES = 3


_HOW = N_(
    "Counted by building {model_class} from the config with transformers on the meta device: no weights, "
    "no remote code.{cached} The total is what parameters() counts (tied weights once); "
    "the parts are attributed by module name and type, by this rule:"
)
_CACHED = N_(" These counts are transformers {version}'s build of this config, read back from ffn's cache (--no-cache builds it again).")


def how_counted(m: BuiltModel, say: Callable[[str], str] = str) -> str:
    """The sentence that says plainly where the numbers come from (in English for --json;
    `say=_` in the reader's language)."""
    cached = say(_CACHED).format(version=m.transformers_version) if m.cached_from else ""
    return say(_HOW).format(model_class=m.model_class, cached=cached)


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
        "zero_experts": r.zero_experts,
        "least_active_params": r.least_active_params,
        "mean_active_params": r.mean_active_params,
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
        "least_active_params": m.least_active_params,
        "mean_active_params": m.mean_active_params,
        "embedding_params": m.params_of("embedding"),
        "attention_params": m.params_of("attention"),
        "ffn_params": m.params_of("ffn"),
        "norm_params": m.params_of("norm"),
        "head_params": m.params_of("head"),
        "other_params": m.params_of("other"),
        "vision_params": m.params_of("vision"),
        "ffn_share": m.params_of("ffn") / total if total else None,
        "other_share": m.params_of("other") / total if total else None,
        "weight_bytes": {d: total * DTYPE_BYTES[d] for d in DTYPE_BYTES},
        "training_memory": training_data(training_memory(total, dtype)),
        "notes": list(m.notes),
    }


def _modules(names: tuple[str, ...]) -> str:
    shown = ", ".join(literal(n) for n in names[:_SHOWN_MODULES])
    more = len(names) - _SHOWN_MODULES
    return shown + (f", … {more} more" if more > 0 else "")


def _title(m: BuiltModel) -> Text:
    text = f"{m.name} · {m.model_type}"  # the name is config.json's: printed as written
    if m.n_layers is not None:
        text += " · " + _("{layers} layers").format(layers=m.n_layers)
    if m.d_model is not None:
        text += f" · d_model {m.d_model:,}"
    if m.vocab_size is not None:
        text += " · " + _("vocab {vocab:,}").format(vocab=m.vocab_size)
    return Text(visible(text))


def _parts_table(m: BuiltModel) -> FitTable:
    total, active = m.total_params, m.active_params
    rows: list[Any] = []
    for p in m.parts:
        active_line = "\n[dim]" + _("active {count}").format(count=fmt_count(p.active_params)) + "[/]"
        params = fmt_count(p.params) + (active_line if p.inactive_params else "")
        rows.append([_(p.name), params, pct(p.params, total), f"[dim]{_modules(p.modules) or '–'}[/]"])
    rows.append(None)
    shown_active = "\n[dim]" + _("active {count}").format(count=fmt_count(active)) + "[/]" if active is not None and active != total else ""
    shown_active = "\n[dim]" + _("active unknown") + "[/]" if active is None else shown_active
    built_as = "[dim]" + _("built as {model_class}").format(model_class=m.model_class) + "[/]"
    rows.append(["[bold]" + _("total") + "[/]", f"[bold]{fmt_count(total)}[/]{shown_active}", "100%", built_as])
    columns = [Col(_("part"), "fixed"), Col(_("params")), Col("%", drop=2), Col(_("modules"), "text", drop=1)]
    return table(_title(m), columns, rows)


def _rule_table(m: BuiltModel) -> FitTable:
    rows = [[_(PART_NAMES[kind]), f"[dim]{_(text)}[/]"] for kind, text in m.rules]
    return table("", [Col(_("part"), "fixed"), Col(_("rule"), "text")], rows, show_header=False)


def _routed_line(r: RoutedExperts) -> list[str]:
    where = f"{r.containers} × {_modules(r.modules)}"
    if r.active_params is None:
        return [
            _("active experts"),
            _("unknown"),
            _("{why}; routed experts in {where}").format(why=shown(r.unknown_because or ""), where=where),
        ]
    text = _("of {params}: {top_k} ({key}) of {experts}, in {where}")
    return [
        _("active experts"),
        fmt_count(r.active_params),
        text.format(params=fmt_count(r.params), top_k=r.top_k_text.shown(), key=r.top_k_key, experts=r.experts, where=where),
    ]


def _active_rows(m: BuiltModel) -> list[list[str]]:
    """What one token touches, with and without the token embeddings (vendors state either); a
    range where zero-computation experts can take some of the picks."""
    total, active, least, mean = m.total_params, m.active_params, m.least_active_params, m.mean_active_params
    if active is None or least is None or mean is None:
        return [[_("active per token"), _("unknown"), _("needs the experts per token")]]
    embeddings = m.params_of("embedding")
    without = _("{share} of the total; {n} without the token embeddings")
    if least == active:
        return [[_("active per token"), fmt_count(active), without.format(share=pct(active, total), n=fmt_count(active - embeddings))]]
    return active_range_rows(least, mean, active, total, embeddings, max(r.zero_experts for r in m.routed))


def _summary(m: BuiltModel, dtype: str) -> FitTable:
    total = m.total_params
    rows: list[Any] = [_routed_line(r) for r in m.routed]
    if m.routed:
        rows += [*_active_rows(m), None]
    rows += memory_rows(total, dtype)
    columns = [Col(_("what"), "fixed"), Col(_("value")), Col(_("how"), "text")]
    return table(_("summary"), columns, rows, show_header=False)


def built_view(m: BuiltModel, dtype: str = "bfloat16") -> RenderableType:
    notes = [Wide(Text(_("note: {note}").format(note=shown(n) if isinstance(n, Message) else _(n)), style="dim")) for n in m.notes]
    how = Wide(Text(how_counted(m, _)))
    return Group(_parts_table(m), Text(""), how, _rule_table(m), *notes, Text(""), _summary(m, dtype))


_LAID_OUT = N_(
    "Laid out from transformers' own modules: one decoder layer of each kind built on the meta device "
    "(no weights, no remote code), each part checked against the built module's count."
)


def layout_view(layout: BuiltLayout) -> RenderableType:
    """How the layout of a model no reader knows was read: its layer kinds and what is left out."""
    columns = [Col(_("which layers"), "text", floor=12), Col(_("one built layer of the kind holds"), "text")]
    rows: list[Any] = [[_("beside the layers") if where == "beside" else shown(where), shown(holds)] for where, holds in layout.kinds]
    lines: list[RenderableType] = [
        FitTable(Text(_("layout of {name}").format(name=layout.spec.name)), columns, rows, caption=Text(_(_LAID_OUT), style="dim"))
    ]
    left_out = (*layout.left_out, *layout.flops_left_out)
    lines += [Wide(Text(_("left out: {what}").format(what=shown(what)), style="yellow")) for what in left_out]
    said = [shown(note) if isinstance(note, Message) else _(note) for note in layout.notes]
    lines += [Wide(Text(_("note: {note}").format(note=note), style="dim")) for note in said]
    return Group(*lines)


def layout_data(layout: BuiltLayout) -> dict[str, Any]:
    return {
        "read_from": "transformers modules, one layer of each kind",
        "kinds": [{"layers": where, "holds": holds} for where, holds in layout.kinds],
        "left_out": list(layout.left_out),
        "flops_left_out": list(layout.flops_left_out),
        "notes": list(layout.notes),
        # tokens the forward puts before every sequence (CPM-Ant's soft prompt), counted in every length
        "prefix_tokens": layout.prefix_tokens,
    }
