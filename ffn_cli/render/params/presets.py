"""`ffn params --list-presets`: each shipped preset with its totals, its active count where it
differs, and its FFN/attention ratio."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ffn_cli.i18n import _
from ffn_cli.render.fit import Col, FitTable
from ffn_cli.render.format import fmt_count
from ffn_cli.render.literal import literal
from ffn_cli.render.params.common import ratio, table

if TYPE_CHECKING:
    from ffn_cli.models.count import ModelParams

__all__ = ["presets_data", "presets_table"]


def _row(name: str, m: ModelParams | str, source: str) -> dict[str, Any]:
    if isinstance(m, str):  # a model_type no reader knows: laid out from its built layers when named
        counts = ("n_layers", "d_model", "total_params", "active_params", "ffn_attention_ratio")
        return {"name": name, "source": source, "model_type": m, **dict.fromkeys(counts)}
    return {
        "name": name,
        "source": source,
        "model_type": m.spec.model_type,
        "n_layers": m.spec.n_layers,
        "d_model": m.spec.d_model,
        "total_params": m.total_params,
        "active_params": m.active_params,
        "ffn_attention_ratio": m.ffn_attention_ratio,
    }


def presets_data(models: list[tuple[str, ModelParams | str, str]]) -> list[dict[str, Any]]:
    """models: (preset name, its accounting or, for a model_type no reader knows, that
    model_type, the Hub repository it describes)."""
    return [_row(name, m, source) for name, m, source in models]


def presets_table(models: list[tuple[str, ModelParams | str, str]]) -> FitTable:
    columns = [Col(_("preset"), "text"), Col(_("total")), Col(_("active"), drop=2), Col(_("FFN/attn"), drop=1)]
    rows = []
    for row in presets_data(models):
        if row["total_params"] is None:
            built = _("counted once named: laid out with transformers")
            rows.append([f"{literal(row['name'])}\n[dim]{literal(row['model_type'])} · {built}[/]", "—", "", "—"])
            continue
        layers = _("{n} layers").format(n=row["n_layers"])
        name = f"{literal(row['name'])}\n[dim]{literal(row['model_type'])} · {layers} · d {row['d_model']:,}[/]"
        active = fmt_count(row["active_params"]) if row["active_params"] != row["total_params"] else ""
        rows.append([name, fmt_count(row["total_params"]), active, ratio(row["ffn_attention_ratio"])])
    return table(_("presets: ffn params --preset NAME"), columns, rows)
