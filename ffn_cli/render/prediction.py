"""Forecasts held to measurement: each bench case's measured time beside the forecast from the
profile and the roofline's bound, the error in %, and a summary over the sweep."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from ffn_cli.benchmark.result import BenchResult
from ffn_cli.costs.roofline.one_ffn import FFNPass
from ffn_cli.hardware import GPU
from ffn_cli.hardware.predict import Prediction
from ffn_cli.i18n import _
from ffn_cli.render.fit import Col, FitTable, Wide
from ffn_cli.render.format import fmt_bytes, fmt_flops, fmt_rate
from ffn_cli.render.literal import visible
from ffn_cli.render.prose import ProseLine
from ffn_cli.render.roofline import BOUND_NOTE, bound_word, fmt_intensity, fmt_time, part_data

__all__ = [
    "add_forecasts",
    "ffn_roofline_data",
    "ffn_roofline_view",
    "forecast_lines",
    "prediction_data",
    "prediction_lines",
    "prediction_summary",
]


def prediction_summary(results: Sequence[BenchResult]) -> dict[str, Any] | None:
    """Mean absolute and worst error over the forecast cases, and the cases whose bound exceeded the measurement."""
    forecast = [r for r in results if r.prediction_error_pct is not None]
    if not forecast:
        return None
    worst = max(forecast, key=lambda r: abs(r.prediction_error_pct or 0.0))
    return {
        "cases": len(forecast),
        "mean_abs_error_pct": sum(abs(r.prediction_error_pct or 0.0) for r in forecast) / len(forecast),
        "worst_error_pct": worst.prediction_error_pct,
        "worst_case": worst.label,
        "bound_above_measured": [r.label for r in results if r.bound_ms is not None and r.bound_ms > r.median_ms],
    }


def prediction_lines(results: Sequence[BenchResult]) -> list[Text | ProseLine | Wide]:
    """One line per forecast case, then the summary; none when no case has a forecast."""
    summary = prediction_summary(results)
    if summary is None:
        return []
    heading = Text(_("forecast from the profile `this` (ffn hardware --measure), made before the run:"), style="dim")
    lines: list[Text | ProseLine | Wide] = [heading]
    for r in results:
        if r.predicted_ms is None or r.prediction_error_pct is None:
            continue
        bound = _(", bound ≥ {bound} ms").format(bound=f"{r.bound_ms:.4g}") if r.bound_ms is not None else ""
        line = _("{label}: measured {median} ms, predicted {predicted} ms ({error} %){bound}").format(
            label=r.label,
            median=f"{r.median_ms:.4g}",
            predicted=f"{r.predicted_ms:.4g}",
            error=f"{r.prediction_error_pct:+.1f}",
            bound=bound,
        )
        lines.append(ProseLine(line, style="dim"))
    text = _("forecast error over {n} cases: mean |error| {mean} %, worst {worst} % ({case})").format(
        n=summary["cases"],
        mean=f"{summary['mean_abs_error_pct']:.1f}",
        worst=f"{summary['worst_error_pct']:+.1f}",
        case=summary["worst_case"],
    )
    lines.append(ProseLine(text))
    for label in summary["bound_above_measured"]:
        lines.append(
            Wide(Text(_("warning: {label} ran faster than its bound: the bound is wrong here").format(label=label), style="yellow"))
        )
    return lines


def prediction_data(forecast: Prediction | None) -> dict[str, Any]:
    """A forecast's fields for --json (predicted_s, and its parts)."""
    if forecast is None:
        return {"predicted_s": None}
    return {
        "predicted_s": forecast.seconds,
        "predicted_ms": forecast.seconds * 1e3,
        "predicted_parts_s": {"gemm": forecast.gemm_s, "elementwise": forecast.elementwise_s, "fixed": forecast.fixed_s},
    }


def add_forecasts(roofline: dict[str, Any], forecasts: Sequence[Prediction | None] | None) -> None:
    """`roofline.cases[].ffn_one_layer` gains predicted_s beside time_lower_bound_s (a profile's GPU only)."""
    for case, forecast in zip(roofline["cases"], forecasts or [], strict=False):
        case["ffn_one_layer"] |= prediction_data(forecast)


def forecast_lines(roofline: dict[str, Any]) -> list[ProseLine]:
    """Under a model's roofline on the profile: one layer's FFN, forecast beside its bound."""
    lines = []
    for case in roofline["cases"]:
        ffn = case["ffn_one_layer"]
        if ffn.get("predicted_s") is not None:
            text = _("FFN ×1, batch {batch}: forecast {predicted} from the profile (bound ≥ {bound})").format(
                batch=f"{case['batch']:,}", predicted=fmt_time(ffn["predicted_s"]), bound=fmt_time(ffn["time_lower_bound_s"])
            )
            lines.append(ProseLine(text, style="dim"))
    return lines


def ffn_roofline_data(passes: Sequence[FFNPass], gpu: GPU, dtype: str) -> dict[str, Any]:
    peak, bandwidth = gpu.tflops[dtype], gpu.bandwidth_gbps
    cases = [
        {
            "phase": p.case.phase,
            "batch": p.case.batch,
            "seq_len": p.case.seq_len,
            "tokens": p.case.tokens,
            "ffn_one_layer": part_data(p.cost, peak, bandwidth) | (prediction_data(p.forecast) if gpu.source == "measured" else {}),
        }
        for p in passes
    ]
    return {
        "gpu": gpu.key,
        "peak_dtype": dtype,
        "peak_tflops": peak,
        "bandwidth_gbps": bandwidth,
        "ridge_flop_per_byte": gpu.ridge(dtype),
        "cases": cases,
    }


def ffn_roofline_view(passes: Sequence[FFNPass], gpu: GPU, dtype: str) -> FitTable:
    peak, bandwidth = gpu.tflops[dtype], gpu.bandwidth_gbps
    measured = gpu.source == "measured"
    columns = [
        Col(_("batch")),
        Col(_("tokens")),
        Col("FLOPs"),
        Col(_("bytes"), drop=2),
        Col("FLOP/B", drop=3),
        Col(_("bound"), "fixed"),
        Col(_("time ≥")),
    ]
    if measured:
        columns.append(Col(_("forecast")))
    rows: list[Any] = []
    for p in passes:
        r = p.cost.roofline(peak, bandwidth)
        cells = [f"{p.case.batch:,}", f"{p.case.tokens:,}", fmt_flops(p.cost.flops), fmt_bytes(p.cost.bytes_), fmt_intensity(r.intensity)]
        cells += [bound_word(r.bound), fmt_time(r.time_s)]
        if measured:
            cells.append(fmt_time(p.forecast.seconds) if p.forecast is not None else "—")
        rows.append(cells)
    title = _("one FFN's forward on {gpu} ({dtype} {peak} TFLOP/s, {bandwidth} GB/s)").format(
        gpu=visible(gpu.label), dtype=dtype, peak=fmt_rate(peak), bandwidth=fmt_rate(bandwidth)
    )
    caption = _(BOUND_NOTE)
    if measured:
        caption += _(". forecast: the profile's GEMM grid on this FFN's shapes, its elementwise ops, its fixed call cost")
    return FitTable(Text(title), columns, rows, caption=Text(caption, style="dim"))
