"""`ffn bench --plot FILE`: one picture of a report, worth sharing.

Top: a bar per case of achieved TFLOP/s, whiskers from the first to the third quartile of the
times, a colour per variant with its legend. Below: the roofline, each case at its arithmetic
intensity under the device's compute peak and memory bandwidth (measured by --calibrate, or
the datasheet). Matplotlib is imported here only, and only when a plot is asked for.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ffn_cli.errors import FFNRuntimeError
from ffn_cli.i18n import _, language, set_language
from ffn_cli.outputs import check_output_file, write_atomically

if TYPE_CHECKING:
    from ffn_cli.bench import BenchReport, BenchResult

__all__ = ["PLOT_FORMATS", "check_plot_target", "iqr_tflops", "picture_language", "write_plot"]

PLOT_FORMATS = (".png", ".svg", ".pdf")
WIDTH_IN = 9.0
TITLE_CHARS = 90  # characters of title per line at WIDTH_IN inches and 10 pt
ROOFLINE_IN = 4.2
# Fonts with Chinese glyphs, any of which lets the picture speak Chinese; without one it stays English
# (matplotlib's own DejaVu Sans has no CJK glyphs, and would draw boxes).
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "Microsoft YaHei", "PingFang SC", "SimHei")


def check_plot_target(path: str) -> Path:
    """Refuse a plot file we could not write, before any timing starts."""
    target = check_output_file("plot", path, PLOT_FORMATS)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise FFNRuntimeError("--plot needs matplotlib: pip install ffn-cli[plot]") from None
    return target


def iqr_tflops(r: BenchResult) -> tuple[float, float]:
    """TFLOP/s at the third and the first quartile of the times (slow end, fast end)."""
    rate = r.flops / 1e9  # TFLOP/s × ms
    return (rate / r.q3_ms if r.q3_ms > 0 else r.tflops), (rate / r.q1_ms if r.q1_ms > 0 else r.tflops)


def _colours(results: Sequence[BenchResult]) -> dict[str, Any]:
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    variants = list(dict.fromkeys(r.variant for r in results))
    return {v: palette(i % 10) for i, v in enumerate(variants)}


def _title(parts: Sequence[str]) -> str:
    return "\n".join(textwrap.wrap(" · ".join(parts), TITLE_CHARS))


def _cjk_font() -> str | None:
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FONTS if name in names), None)


@contextmanager
def picture_language() -> Iterator[None]:
    """Draw in the current language where a font has its glyphs; Chinese without a CJK font would
    be boxes, so the picture then speaks English (the terminal keeps its language)."""
    from matplotlib import rc_context

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
    from matplotlib.patches import Patch

    return Patch(color=colour, label=label)


def _ceilings(results: Sequence[BenchResult]) -> dict[str, tuple[float, float]]:
    """dtype → (peak TFLOP/s, bandwidth TB/s), from the results that know them."""
    found: dict[str, tuple[float, float]] = {}
    for r in results:
        if r.peak_tflops and r.ridge_flop_per_byte:
            found.setdefault(r.dtype, (r.peak_tflops, r.peak_tflops / r.ridge_flop_per_byte))
    return found


def _roofline(ax: Any, report: BenchReport, colours: dict[str, Any], starred: Sequence[bool]) -> None:
    import numpy as np

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
    target = check_plot_target(path)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = len(report.results)
    bars_in = max(1.4, 0.3 * n + 0.9)
    env = report.env
    title = _title([*shared, env.device_name, f"torch {env.torch_version}", _("cache {cache}").format(cache=env.cache)])
    fig = Figure(figsize=(WIDTH_IN, bars_in + ROOFLINE_IN + 0.4 * (title.count("\n") + 1)), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, height_ratios=[bars_in, ROOFLINE_IN])
    colours = _colours(report.results)
    _bars(top, report, labels, colours)
    _roofline(bottom, report, colours, [label.endswith("★") for label in labels])
    fig.suptitle(title, fontsize=10)
    return write_atomically(target, lambda tmp: fig.savefig(tmp, format=target.suffix.lstrip(".").lower(), dpi=130), option="plot")
