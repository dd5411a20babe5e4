"""`ffn bench --plot FILE`: one picture of a report, worth sharing.

Top: a bar per case of achieved TFLOP/s, whiskers from the first to the third quartile of the
times, a colour per variant with its legend. Below: the roofline, each case at its arithmetic
intensity under the device's compute peak and memory bandwidth (measured by --calibrate, or
the datasheet). Matplotlib is imported here only: this module is loaded when a plot is drawn
(render/bench.py's and cli/params_cmd.py's --plot), never by a command that draws none.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import pairwise
from math import exp, log
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib import colormaps, font_manager, rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ffn_cli.i18n import _, language, set_language
from ffn_cli.outputs import check_plot_file, write_file
from ffn_cli.render.format import cache_words
from ffn_cli.render.literal import visible

if TYPE_CHECKING:
    from ffn_cli.benchmark import BenchReport, BenchResult

__all__ = [
    "iqr_tflops",
    "picture_language",
    "ridge_batch",
    "write_plot",
    "write_roofline_plot",
]

WIDTH_IN = 9.0
TITLE_CHARS = 90  # characters of title per line at WIDTH_IN inches and 10 pt
ROOFLINE_IN = 4.2
# Fonts with Chinese glyphs, any of which lets the picture speak Chinese; without one it stays English
# (matplotlib's own DejaVu Sans has no CJK glyphs, and would draw boxes).
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "Microsoft YaHei", "PingFang SC", "SimHei")


def _save(fig: Any, target: Path) -> Path:
    """The figure in the format its name says, written by ffn_cli/outputs.py (the one writer)."""
    return write_file(target, lambda handle: fig.savefig(handle, format=target.suffix.lstrip(".").lower(), dpi=130), option="plot")


def iqr_tflops(r: BenchResult) -> tuple[float, float]:
    """TFLOP/s at the third and the first quartile of the times (slow end, fast end)."""
    rate = r.flops / 1e9  # TFLOP/s × ms
    return (rate / r.q3_ms if r.q3_ms > 0 else r.tflops), (rate / r.q1_ms if r.q1_ms > 0 else r.tflops)


def _colours(results: Sequence[BenchResult]) -> dict[str, Any]:
    palette = colormaps["tab10"]
    variants = list(dict.fromkeys(r.variant for r in results))
    return {v: palette(i % 10) for i, v in enumerate(variants)}


def _title(parts: Sequence[str]) -> str:
    return "\n".join(textwrap.wrap(" · ".join(parts), TITLE_CHARS))


def _cjk_font() -> str | None:
    names = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FONTS if name in names), None)


@contextmanager
def picture_language() -> Iterator[None]:
    """Draw in the current language where a font has its glyphs; Chinese without a CJK font would
    be boxes, so the picture then speaks English (the terminal keeps its language)."""

    spoken = language()
    cjk = _cjk_font() if spoken != "en" else None
    if spoken == "en" or cjk:
        with rc_context({"font.family": [cjk, "DejaVu Sans"]} if cjk else {}):
            yield
        return
    set_language("en")
    try:
        yield
    finally:
        set_language(spoken)


def _bars(ax: Any, report: BenchReport, labels: Sequence[str], colours: dict[str, Any]) -> None:
    results = report.results
    n = len(results)
    lows, highs = zip(*(iqr_tflops(r) for r in results), strict=True)
    values = [r.tflops for r in results]
    # max(0, …): a median outside its quartiles cannot happen in a real run; never draw a negative whisker.
    whiskers = [
        [max(0.0, v - lo) for v, lo in zip(values, lows, strict=True)],
        [max(0.0, hi - v) for v, hi in zip(values, highs, strict=True)],
    ]
    y = range(n)
    ax.barh(y, values, color=[colours[r.variant] for r in results], xerr=whiskers, capsize=3 if n <= 20 else 1.5, ecolor="0.25")
    ax.set_yticks(list(y), labels, fontsize=9 if n <= 20 else 7)
    ax.invert_yaxis()
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlabel(_("achieved TFLOP/s (analytic FLOPs / median time); whiskers: first to third quartile"))
    right = max([*highs, *values])
    ax.set_xlim(0, (right or 1.0) * 1.35)  # room for the notes beside the longest bar
    for i, r in enumerate(results):
        of_peak = _(", {pct} % of peak").format(pct=f"{r.pct_peak:.0f}") if r.pct_peak is not None else ""
        note = f" {r.median_ms:.3g} ms" + of_peak
        ax.annotate(note, (max(highs[i], values[i]), i), va="center", fontsize=8 if n <= 20 else 6)
    handles = [_patch(colours[v], v) for v in colours]
    ax.legend(handles=handles, title=_("variant"), loc="lower right", fontsize=8, title_fontsize=8, framealpha=0.9)


def _patch(colour: Any, label: str) -> Any:
    return Patch(color=colour, label=label)


def _ceilings(results: Sequence[BenchResult]) -> dict[str, tuple[float, float]]:
    """dtype → (peak TFLOP/s, bandwidth TB/s), from the results that know them."""
    found: dict[str, tuple[float, float]] = {}
    for r in results:
        if r.peak_tflops and r.ridge_flop_per_byte:
            found.setdefault(r.dtype, (r.peak_tflops, r.peak_tflops / r.ridge_flop_per_byte))
    return found


def _roofline(ax: Any, report: BenchReport, colours: dict[str, Any], starred: Sequence[bool]) -> None:
    results = report.results
    xs = [r.intensity_flop_per_byte for r in results]
    ys = [max(r.tflops, 1e-9) for r in results]
    ceilings = _ceilings(results)
    lo = min(xs + [r.ridge_flop_per_byte or xs[0] for r in results]) / 4
    hi = max(xs + [r.ridge_flop_per_byte or xs[0] for r in results]) * 4
    grid = np.geomspace(lo, hi, 200)
    for dtype, (peak, bandwidth) in ceilings.items():
        ax.plot(grid, np.minimum(peak, bandwidth * grid), color="0.3", lw=1.2)
        ax.annotate(f"{dtype}: {peak:.3g} TFLOP/s, {bandwidth:.3g} TB/s", (grid[0], peak), ha="left", va="bottom", fontsize=8)
    for r, x, y, star in zip(results, xs, ys, starred, strict=True):
        ax.scatter([x], [y], color=colours[r.variant], s=28, zorder=3, edgecolors="black" if star else "none")
    if any(starred):
        ax.scatter([], [], color="white", edgecolors="black", s=28, label=_("fastest implementation of its case"))
        ax.legend(loc="lower right", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(_("arithmetic intensity (FLOP per byte moved: weights, input, output)"))
    ax.set_ylabel("TFLOP/s")
    if ceilings:
        ax.set_title(_("roofline: each case against the device's peak and bandwidth"), fontsize=10)
    else:
        device = report.env.device_name
        ax.set_title(_("roofline: no known peak for {device}; --calibrate measures one").format(device=device), fontsize=10)
    ax.grid(True, which="both", alpha=0.25)


def write_plot(report: BenchReport, path: str, labels: Sequence[str], shared: Sequence[str]) -> Path:
    """The bars and the roofline in one picture, written whole or not at all."""
    target = check_plot_file(path)

    n = len(report.results)
    bars_in = max(1.4, 0.3 * n + 0.9)
    env = report.env
    title = _title([*shared, env.device_name, f"torch {env.torch_version}", cache_words(env.cache)])
    fig = Figure(figsize=(WIDTH_IN, bars_in + ROOFLINE_IN + 0.4 * (title.count("\n") + 1)), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, height_ratios=[bars_in, ROOFLINE_IN])
    colours = _colours(report.results)
    _bars(top, report, labels, colours)
    _roofline(bottom, report, colours, [label.endswith("★") for label in labels])
    fig.suptitle(title, fontsize=10)
    return _save(fig, target)


# --- ffn params --gpu --batch …,… --plot: the roofline's batch sweep ------------------------------------


def ridge_batch(batches: Sequence[int], intensities: Sequence[float], ridge: float) -> float | None:
    """The batch at which a part's intensity reaches the ridge, interpolated between the two sweep
    points around it in log-log (intensity grows as a power of batch between them); None when the
    sweep never crosses, or starts past, the ridge."""

    points = list(zip(batches, intensities, strict=True))
    for (b0, i0), (b1, i1) in pairwise(points):
        if i0 < ridge <= i1:
            if i1 == i0:
                return float(b1)
            share = (log(ridge) - log(i0)) / (log(i1) - log(i0))
            return exp(log(b0) + share * (log(b1) - log(b0)))
    return None


def write_roofline_plot(
    costs: Sequence[Any], gpu: Any, dtype: str, model: str, n_layers: int, path: str, backward: Sequence[Any] | None = None
) -> Path:
    """The sweep in one picture: top, each part's time lower bound against batch (log-log), its
    memory floor (bytes / bandwidth) dashed; below, the attainable TFLOP/s (FLOPs / the bound)
    under the peak, with the batch where the FFN's intensity reaches the ridge point marked."""
    target = check_plot_file(path)
    with picture_language():
        return _roofline_sweep(target, costs, gpu, dtype, model, n_layers, backward)


def _roofline_sweep(
    target: Path, costs: Sequence[Any], gpu: Any, dtype: str, model: str, n_layers: int, backward: Sequence[Any] | None
) -> Path:
    peak, bandwidth = gpu.tflops[dtype], gpu.bandwidth_gbps
    ridge = gpu.ridge(dtype)
    batches = [c.case.batch for c in costs]
    case = costs[0].case
    palette = colormaps["tab10"]
    whole = _("model ×{n}").format(n=n_layers)
    series = [(_("FFN ×1"), [c.ffn for c in costs]), (_("attn ×1"), [c.attention for c in costs]), (whole, [c.model for c in costs])]
    if backward is not None:
        series += [
            (_("FFN ×1 bwd"), [b.ffn for b in backward]),
            (_("attn ×1 bwd"), [b.attention for b in backward]),
            (_("model ×{n} bwd").format(n=n_layers), [b.model for b in backward]),
        ]
    if case.phase == "decode":
        what = _("decode, context {n}").format(n=f"{case.seq_len:,}")
    else:
        what = _("prefill, {n} tokens per sequence").format(n=f"{case.seq_len:,}")
    head = _("roofline on {gpu} ({dtype} {peak} TFLOP/s, {bandwidth} GB/s, ridge {ridge} FLOP/B): {what}").format(
        gpu=visible(gpu.label), dtype=dtype, peak=f"{peak:g}", bandwidth=f"{bandwidth:,.0f}", ridge=f"{ridge:.4g}", what=what
    )
    title = _title([model, head])
    fig = Figure(figsize=(WIDTH_IN, 7.6 + 0.4 * (title.count("\n") + 1)), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True)
    lowest = peak
    for k, (label, parts) in enumerate(series):
        colour = palette(k % 3)
        style = "--" if k >= 3 else "-"
        lines = [p.roofline(peak, bandwidth) for p in parts]
        times = [r.time_s * 1e3 for r in lines]
        top.plot(batches, times, style, color=colour, marker="o", ms=4, label=label)
        rates = [r.flops / r.time_s / 1e12 if r.time_s else 0.0 for r in lines]
        bottom.plot(batches, rates, style, color=colour, marker="o", ms=4, label=label)
        lowest = min([lowest, *(r for r in rates if r > 0)])
        for b, r, t, rate in zip(batches, lines, times, rates, strict=True):
            if r.bound == "compute":  # filled: compute-bound; hollow: memory-bound
                continue
            top.plot([b], [t], "o", color="white", ms=2.5, zorder=3)
            bottom.plot([b], [rate], "o", color="white", ms=2.5, zorder=3)
    floor = [c.ffn.bytes_ / (bandwidth * 1e9) * 1e3 for c in costs]
    top.plot(batches, floor, ":", color="0.45", lw=1, label=_("FFN ×1: bytes / bandwidth"))
    bottom.axhline(peak, color="0.3", lw=1.2)
    bottom.annotate(_("peak {peak} TFLOP/s").format(peak=f"{peak:g}"), (batches[0], peak), va="bottom", fontsize=8)
    crossing = ridge_batch(batches, [c.ffn.roofline(peak, bandwidth).intensity for c in costs], ridge)
    if crossing is not None:
        note = _("FFN ×1 reaches the ridge ({ridge} FLOP/B) at batch ≈ {batch}: compute-bound past it")
        top.axvline(crossing, color="tab:red", lw=1, ls="-.")
        bottom.axvline(crossing, color="tab:red", lw=1, ls="-.", label=note.format(ridge=f"{ridge:.4g}", batch=f"{crossing:.3g}"))
        bottom.legend(fontsize=8, loc="lower right", framealpha=0.9)
    top.set_yscale("log")
    top.set_ylabel(_("time lower bound (ms)"))
    top.set_title(_("time ≥ max(FLOPs / peak, bytes / bandwidth); hollow points: memory-bound"), fontsize=10)
    top.legend(fontsize=8, loc="best", framealpha=0.9)
    bottom.set_xscale("log")
    bottom.set_yscale("log")
    bottom.set_ylim(lowest / 3, peak * 2.5)  # every case compute-bound would leave one line at the peak
    bottom.set_xlabel(_("batch (sequences in the pass)"))
    bottom.set_ylabel(_("attainable TFLOP/s (FLOPs / the bound)"))
    bottom.set_xticks(batches, [f"{b:,}" for b in batches])
    bottom.set_xticks([], minor=True)  # the batches alone: a log axis would add 2×10⁰, 3×10⁰… between them
    for ax in (top, bottom):
        ax.grid(True, which="both", alpha=0.25)
    fig.suptitle(title, fontsize=10)
    return _save(fig, target)
