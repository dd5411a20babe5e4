"""A model's weights as stored: each role's format, exact bits per weight and bytes, beside the
same model in bf16 everywhere."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ffn_cli.costs.weights import PART_WORDS, Checkpoint, shipped_words
from ffn_cli.i18n import N_, _, shown
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_bytes, fmt_count
from ffn_cli.render.literal import visible

__all__ = ["checkpoint_data", "checkpoint_view"]

MIXED = N_("mixed")  # a row whose tensors take more than one format (an MTP layer's)
NOT_COUNTED = N_("weights only: the KV cache, activations, optimizer state and runtime buffers are not counted")


def _rows(c: Checkpoint) -> list[dict[str, Any]]:
    """One row per role, in the order the roles first appear; what the checkpoint ships beside
    the model (its MTP layers) a row of its own, in whatever formats its tensors take."""
    grouped: dict[str, dict[str, Any]] = {}
    for t in c.tensors:
        fmt = c.plan.format_of(t)
        key, words = (t.part, PART_WORDS[t.part]) if t.part else (t.role, c.words(t.role))
        row = grouped.setdefault(key, {"role": key, "what": words, "format": fmt.name, "params": 0, "bits": 0})
        if row["format"] != fmt.name:
            row["format"] = "mixed"
        row["params"] += t.params
        row["bits"] += c.bits_of(t)
    for row in grouped.values():
        row["bits_per_weight"] = row["bits"] / row["params"]
        row["bytes"] = -(-row.pop("bits") // 8)
    return list(grouped.values())


def checkpoint_data(c: Checkpoint, bf16_bytes: int, note: str = "") -> dict[str, Any]:
    fmt = c.plan.fmt
    return {
        "origin": c.plan.origin,
        "format": {"name": fmt.name, "bits_per_weight": float(fmt.bits_per_weight()), "description": fmt.describe()},
        "formats_by_role": {
            role: {"name": f.name, "bits_per_weight": float(f.bits_per_weight()), "description": f.describe()} for role, f in c.plan.by_role
        },
        "rest_format": c.plan.rest.name,
        "quantized_roles": sorted({t.role for t in c.tensors if c.quantized(t) and not t.part}),
        "shipped_params": c.shipped_params,
        "total_params": c.total_params,  # the model's and what the checkpoint ships beside it
        "quantized_params": c.quantized_params,
        "rest_params": c.rest_params,
        "bytes": c.bytes_,
        "bits_per_weight": 8 * c.bytes_ / c.total_params,
        "bf16_bytes": bf16_bytes,
        "roles": _rows(c),
        "not_counted": NOT_COUNTED,
        "note": note,
    }


def checkpoint_view(c: Checkpoint, bf16_bytes: int, note: str = "") -> FitTable:
    columns = [
        Col(_("stored"), "text"),
        Col(_("params")),
        Col(_("format"), "fixed", drop=2),
        Col(_("bits/weight"), drop=1),
        Col(_("bytes")),
    ]
    rows: list[Any] = []
    for r in _rows(c):
        fmt = _(MIXED) if r["format"] == "mixed" else r["format"]
        rows.append([_(r["what"]), fmt_count(r["params"]), fmt, f"{r['bits_per_weight']:.6g}", fmt_bytes(r["bytes"])])
    rows.append(None)
    bits = f"{8 * c.bytes_ / c.total_params:.4g}"
    whole = _("in --weights {format}").format(format=c.plan.asked) if c.plan.asked else _("checkpoint")
    rows.append(["[bold]" + whole + "[/]", fmt_count(c.total_params), "", bits, f"[bold]{fmt_bytes(c.bytes_)}[/]"])
    rows.append([_("bf16 everywhere"), fmt_count(c.total_params), "bf16", "16", fmt_bytes(bf16_bytes)])
    by_role = [*c.plan.by_role, *(c.plan.shipped.by_role if c.plan.shipped is not None else ())]  # the MTP layers' own too
    formats = list(dict.fromkeys([c.plan.fmt.describe().shown(), *(f.describe().shown() for _role, f in by_role)]))
    caption = _("{origin}. {format}. ").format(origin=shown(c.plan.origin), format=_("; ").join(formats)) + _(
        "{not_counted}; 1 GiB = 2³⁰ bytes."
    ).format(not_counted=_(NOT_COUNTED))
    if c.shipped_params:  # the summary's weights are the parameter table's: say why the checkpoint's differ
        parts = shown(shipped_words(c.shipped_parts))
        beside = _(" The checkpoint holds the parameter table's {model} parameters and {shipped} more it ships beside them ({parts}), "
                   "which the summary's weights leave out.")  # fmt: skip
        caption += beside.format(model=fmt_count(c.total_params - c.shipped_params), shipped=fmt_count(c.shipped_params), parts=parts)
    caption += _(" {note}.").format(note=visible(shown(note))) if note else ""  # it quotes config.json: modules_to_not_convert's names
    title = Text(_("weights as stored: {bytes}").format(bytes=fmt_bytes(c.bytes_)))
    return FitTable(title, columns, rows, caption=Text(caption, style="dim"))
