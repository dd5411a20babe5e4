"""BenchReport → rich tables and bars, a JSON-ready dict, or a plot file; all from the same fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text

from ffn_cli.i18n import N_, _, ngettext, shown
from ffn_cli.outputs import check_plot_file
from ffn_cli.render.fit import BarChart, Cell, Col, FitTable, Kind, Wide
from ffn_cli.render.format import cache_words, fmt_bytes, fmt_si
from ffn_cli.render.prediction import prediction_lines, prediction_summary
from ffn_cli.render.roofline import bound_word

if TYPE_CHECKING:  # the renderer only reads the dataclasses; it needs no torch
    from ffn_cli.benchmark.estimate import SweepEstimate
    from ffn_cli.benchmark.result import BenchReport, BenchResult

__all__ = [
    "bars",
    "bench_json",
    "bench_view",
    "constant_parts",
    "estimate_line",
    "results_table",
    "write_plot",
]

BAR_WIDTH = 40


def _duration(seconds: float) -> str:
    """45 s, 12 min, 3.5 h: as precise as an estimate is."""
    if seconds < 120:
        return _("{n} s").format(n=f"{seconds:.0f}")
    if seconds < 2 * 3600:
        return _("{n} min").format(n=f"{seconds / 60:.0f}")
    return _("{n} h").format(n=f"{seconds / 3600:.1f}")


def estimate_line(estimate: SweepEstimate) -> str:
    """One line before a long sweep: how long, and from what (benchmark/estimate.py)."""
    rates = ", ".join(f"{dtype} {fmt_si(tflops * 1e12, 'FLOP/s')}" for dtype, tflops in estimate.tflops.items())
    source = _("a GEMM timed just now") if estimate.measured else _("this device's measured GEMM rate")
    cases = ngettext("{n} case", "{n} cases", estimate.cases).format(n=f"{estimate.cases:,}")
    return _("ffn bench: about {time} for {cases}, warm-up and repeats included: {flops} of matmuls at {rates} ({source})").format(
        time=_duration(estimate.seconds), cases=cases, flops=fmt_si(estimate.flops, "FLOP"), rates=rates, source=source
    )


def _pass(r: BenchResult) -> str:
    return _("fwd+bwd") if r.mode == "forward+backward" else _("fwd")


def _bytes(value: int | None) -> str:
    return "—" if value is None else fmt_bytes(value)


def _pct(r: BenchResult) -> str:
    if r.above_peak:
        return _("> peak")
    return "—" if r.pct_peak is None else f"{r.pct_peak:.1f} %"


# The columns that say which case a row is; those with one value in the whole report move to the title.
_CASE_COLUMNS: tuple[tuple[str, Callable[[BenchResult], str]], ...] = (
    ("variant", lambda r: r.variant),
    ("settings", lambda r: " · ".join(_(part) for part in r.settings.split(" · "))),  # words settings_text marked
    ("impl", lambda r: r.impl + (" +ckpt" if r.checkpoint else "")),
    ("pass", _pass),
    ("dtype", lambda r: r.dtype),
    ("d_model", lambda r: str(r.d_model)),
    ("d_ff", lambda r: str(r.d_ff)),
    ("tokens", lambda r: str(r.tokens)),
)
# The headers of those columns, as shown (the names above are keys).
_CASE_HEADERS = {
    "variant": N_("variant"),
    "settings": N_("settings"),
    "impl": N_("impl"),
    "pass": N_("pass"),
    "tokens": N_("tokens"),
}
_TITLE_FORMAT = {"d_model": "d_model {value}", "d_ff": "d_ff {value}"}


def _titled(name: str, value: str) -> str:
    """A case value as a title or a bar label says it: 'd_model 512', '4096 tokens', '1 token'."""
    if name == "tokens":
        return ngettext("{value} token", "{value} tokens", int(value.replace(",", ""))).format(value=value)
    return _(_TITLE_FORMAT.get(name, "{value}")).format(value=value)


def _split_columns(results: Sequence[BenchResult]) -> tuple[list[tuple[str, Callable[[BenchResult], str]]], list[str]]:
    varying, constant = [], []
    for name, get in _CASE_COLUMNS:
        values = list(dict.fromkeys(get(r) for r in results))
        if len(values) > 1 or name == "impl":
            varying.append((name, get))
        elif values and values[0]:
            constant.append(_titled(name, values[0]))
    return varying, constant


def _case(r: BenchResult) -> tuple[object, ...]:
    return (r.variant, r.d_model, r.d_ff, r.batch, r.seq_len, r.dtype, r.mode, r.checkpoint)


def _starred(results: Sequence[BenchResult]) -> set[int]:
    """Indices of the fastest results of cases where several implementations ran: ★ says something there only."""
    impls: dict[tuple[object, ...], set[str]] = {}
    for r in results:
        impls.setdefault(_case(r), set()).add(r.impl)
    return {i for i, r in enumerate(results) if r.fastest and len(impls[_case(r)]) > 1}


def _row_label(r: BenchResult, varying: Sequence[tuple[str, Callable[[BenchResult], str]]], star: bool) -> str:
    """A bar's label: the case columns that vary (settings vary only with the variant, named already)."""
    names = [_titled(name, get(r)) for name, get in varying if name != "settings"]
    return " ".join(names) + (" ★" if star else "")


# How soon each measured column leaves a narrow terminal (1 first; None: it always stays), and
# what it holds, said under the table while it is shown.
_MEASURED: tuple[tuple[str, int | None, str], ...] = (
    (N_("median ms"), None, ""),
    (N_("IQR ms"), 6, N_("IQR: spread of the middle half of the samples")),
    ("n", 1, ""),
    (N_("tokens/s"), 3, ""),
    ("TFLOP/s", None, ""),
    (N_("% peak"), 5, ""),
    (N_("peak mem"), 2, N_("peak mem: CUDA max allocated, or the process's peak RSS on CPU")),
    (N_("extra mem"), 4, N_("extra mem: over what was allocated before the call")),
)
_CASE_KIND: dict[str, Kind] = {"d_model": "num", "d_ff": "num", "tokens": "num", "settings": "text"}
# Distinct: columns that share a drop leave together, and each of these says something alone.
_CASE_DROP = {"variant": None, "settings": 10, "impl": None, "pass": 8, "dtype": 9, "d_model": 13, "d_ff": 12, "tokens": 11}


def results_table(report: BenchReport) -> FitTable:
    env = report.env
    varying, constant = _split_columns(report.results)
    starred = _starred(report.results)
    columns = [Col(_(_CASE_HEADERS.get(name, name)), _CASE_KIND.get(name, "fixed"), drop=_CASE_DROP[name]) for name, _get in varying]
    columns += [Col(_(name), drop=drop, legend=_(legend) if legend else "") for name, drop, legend in _MEASURED]
    columns.append(Col(_("bound"), "fixed", drop=7))
    rows: list[list[Cell]] = []
    names = [name for name, _get in varying]
    for i, r in enumerate(report.results):
        cells: list[Cell] = [Text(get(r)) for _name, get in varying]
        if i in starred:
            cells[names.index("impl")] = Text(f"{r.impl} ★" + (" +ckpt" if r.checkpoint else ""))
        cells += [
            f"{r.median_ms:.4g}",
            Text(f"{r.iqr_ms:.3g}", style="yellow" if r.noisy else ""),
            str(r.samples),
            fmt_si(r.tokens_per_s),
            f"{r.tflops:.3g}",
            _pct(r),
            _bytes(r.peak_mem_bytes),
            _bytes(r.extra_mem_bytes),
            bound_word(r.bound) if r.bound else "—",
        ]
        rows.append(cells)
    title = " · ".join([*constant, f"{env.device_name} ({env.device})", cache_words(env.cache)])
    return FitTable(Text(title), columns, rows, caption=_("★ fastest implementation of its case") if starred else None)


def bars(report: BenchReport) -> BarChart:
    """One bar per result: % of peak when every result has one, else TFLOP/s against the best."""
    results = report.results
    by_peak = all(r.pct_peak is not None for r in results)
    top = max((r.tflops for r in results), default=0.0) or 1.0
    varying = _split_columns(results)[0]
    starred = _starred(results)
    rows = []
    for i, r in enumerate(results):
        fraction = (r.pct_peak or 0.0) / 100 if by_peak else r.tflops / top
        of_peak = _(" · {pct} % of peak").format(pct=f"{r.pct_peak:.1f}") if r.pct_peak is not None else ""
        value = f"{r.tflops:.3g} TFLOP/s" + of_peak
        rows.append((_row_label(r, varying, i in starred), value, fraction))
    return BarChart(rows, max_cells=BAR_WIDTH)


def _env_text(report: BenchReport) -> Text:
    env = report.env
    tf32 = _("on") if env.tf32_matmul else _("off")
    threads = ngettext("{n} thread", "{n} threads", env.threads).format(n=env.threads)
    buffers = ngettext("{n} input buffer", "{n} input buffers", env.input_buffers).format(n=env.input_buffers)
    flush = _(", {bytes} flushed between calls").format(bytes=fmt_bytes(env.flush_bytes)) if env.flush_bytes else _(", no flush")
    text = Text.assemble(
        (_("env") + " ", "bold"),
        f"torch {env.torch_version}",
        f" · CUDA {env.cuda_version}" if env.cuda_version else "",
        _(" · {threads} · TF32 matmul {tf32} · timer {timer}").format(threads=threads, tf32=tf32, timer=env.timer),
        _(" · {cache}: {buffers}").format(cache=cache_words(env.cache), buffers=buffers),
        flush,
        f" · {env.date_utc}",
    )
    calibrated = _(
        "calibrated {dtype}: GEMM {tflops} TFLOP/s (the best of {samples} calls over {shapes} shapes, at {shape}), "
        "copy {gbps} GB/s (read + write, the best call)"
    )
    for cal in report.calibrations:
        shape = f"{cal.gemm_shape[0]}×{cal.gemm_shape[1]}·{cal.gemm_shape[1]}×{cal.gemm_shape[2]}"
        numbers = {"tflops": f"{cal.gemm_tflops:.3g}", "gbps": f"{cal.copy_gbps:.4g}"}
        filled = calibrated.format(dtype=cal.dtype, samples=cal.gemm_samples, shapes=cal.gemm_shapes, shape=shape, **numbers)
        text.append("\n" + filled)
    sources = sorted({r.peak_source for r in report.results if r.peak_source})
    if sources:
        text.append("\n" + _("peak: {sources}").format(sources=_("; ").join(shown(s) for s in sources)))
    return text


def _checkpoint_table(report: BenchReport) -> FitTable:
    columns = [Col(_("case"), "text"), Col(_("ms without"), drop=4), Col(_("ms with"), drop=3), Col(_("time cost"))]
    columns += [
        Col(_("extra mem without"), drop=2),
        Col(_("extra mem with"), drop=1),
        Col(_("saved")),
        Col(_("saved (estimate)"), drop=5),
        Col(_("FLOPs model/hw"), drop=6),
    ]
    rows: list[list[Cell]] = [
        [
            Text(d.label),
            f"{d.base_median_ms:.4g}",
            f"{d.ckpt_median_ms:.4g}",
            f"{d.time_cost_pct:+.1f} %",
            _bytes(d.base_extra_mem_bytes),
            _bytes(d.ckpt_extra_mem_bytes),
            _bytes(d.mem_saved_bytes),
            fmt_bytes(d.est_saved_bytes),
            f"{d.model_forwards:.3g}× / {d.hardware_forwards:.3g}×",
        ]
        for d in report.checkpoint
    ]
    return FitTable(_("gradient checkpointing: memory saved, time cost"), columns, rows, caption=_(_FLOPS_CAPTION))


_FLOPS_CAPTION = N_("FLOPs in forwards: model FLOPs (3×, what MFU counts) / hardware FLOPs, with the recompute")


def bound_lines(results: Sequence[BenchResult]) -> list[Text]:
    """Each case's measured median beside the roofline's lower bound for it, where a ceiling is known."""
    line = _("{label}: measured {median} ms, bound ≥ {bound} ms ({ceiling} ceiling), {pct} % of the bound")
    lines = [
        line.format(
            label=r.label,
            median=f"{r.median_ms:.4g}",
            bound=f"{r.bound_ms:.4g}",
            ceiling=bound_word(r.bound or ""),
            pct=f"{r.pct_of_bound:.1f}",
        )
        for r in results
        if r.bound_ms is not None and r.pct_of_bound is not None
    ]
    if not lines:
        return []
    head = _("roofline: time ≥ max(FLOPs / peak, least bytes / bandwidth), a lower bound, not a forecast")
    return [Text(head, style="dim"), *(Text(line, style="dim") for line in lines)]


def bench_view(report: BenchReport) -> RenderableType:
    """Everything the terminal shows: the table, the bars, the environment, notes."""
    parts: list[RenderableType] = [results_table(report), bars(report), Wide(_env_text(report))]
    if report.checkpoint:
        parts.append(_checkpoint_table(report))
    parts += prediction_lines(report.results) or bound_lines(report.results)
    parts += [Wide(Text(_("skipped: {reason}").format(reason=s), style="dim")) for s in report.skipped]
    parts += [Wide(Text(_("warning: {warning}").format(warning=shown(w)), style="yellow")) for w in report.warnings]
    return Group(*parts)


def _result_dict(r: BenchResult) -> dict[str, Any]:
    data = dataclasses.asdict(r)
    data["label"] = r.label
    data["samples_ms"] = list(r.samples_ms)
    data["prediction_error_pct"] = r.prediction_error_pct
    return data


def bench_json(report: BenchReport) -> dict[str, Any]:
    return {
        "results": [_result_dict(r) for r in report.results],
        "env": dataclasses.asdict(report.env),
        "calibration": [dataclasses.asdict(c) for c in report.calibrations],
        "checkpoint": [dataclasses.asdict(d) for d in report.checkpoint],
        "skipped": list(report.skipped),
        "warnings": [str(w) for w in report.warnings],
        **({"prediction": summary} if (summary := prediction_summary(report.results)) else {}),
    }


# --- plot file ---------------------------------------------------------------------------


def constant_parts(results: Sequence[BenchResult]) -> list[str]:
    """What every case shares (dtype, pass, sizes): the table's and the plot's title."""
    return _split_columns(results)[1]


def write_plot(report: BenchReport, path: str) -> Path:
    """The report drawn to `path` (bars with IQR whiskers, and the roofline); see render.plot."""
    check_plot_file(path)
    from ffn_cli.render import plot  # matplotlib: loaded when a plot is drawn

    with plot.picture_language():
        varying, shared = _split_columns(report.results)
        starred = _starred(report.results)
        labels = [_row_label(r, varying, i in starred) for i, r in enumerate(report.results)]
        return plot.write_plot(report, path, labels, shared)
