"""BenchReport → rich tables and bars, a JSON-ready dict, or a plot file; all from the same fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ffn_cli.errors import FFNRuntimeError
from ffn_cli.outputs import check_output_file, write_atomically
from ffn_cli.render.format import fmt_bytes, fmt_si

if TYPE_CHECKING:  # the renderer only reads the dataclasses; it needs no torch
    from ffn_cli.bench.result import BenchReport, BenchResult, CheckpointDelta

__all__ = ["PLOT_FORMATS", "bars", "bench_json", "bench_view", "check_plot_target", "results_table", "write_plot"]

PLOT_FORMATS = (".png", ".svg", ".pdf")
BAR_WIDTH = 40
_EIGHTHS = " ▏▎▍▌▋▊▉"


def _pass(r: BenchResult) -> str:
    return "fwd+bwd" if r.mode == "forward+backward" else "fwd"


def _mem(r: BenchResult) -> str:
    value = r.peak_mem_bytes if r.mem_source.startswith("cuda") else r.extra_mem_bytes
    return "—" if value is None else fmt_bytes(value)


def _pct(r: BenchResult) -> str:
    return "—" if r.pct_peak is None else f"{r.pct_peak:.1f} %"


# The columns that say which case a row is; those with one value in the whole report move to the title.
_CASE_COLUMNS: tuple[tuple[str, Callable[[BenchResult], str]], ...] = (
    ("variant", lambda r: r.variant),
    ("impl", lambda r: r.impl + (" +ckpt" if r.checkpoint else "")),
    ("pass", _pass),
    ("dtype", lambda r: r.dtype),
    ("d_model", lambda r: str(r.d_model)),
    ("d_ff", lambda r: str(r.d_ff)),
    ("tokens", lambda r: str(r.tokens)),
)
_TITLE_FORMAT = {"d_model": "d_model {}", "d_ff": "d_ff {}", "tokens": "{} tokens"}


def _split_columns(results: Sequence[BenchResult]) -> tuple[list[tuple[str, Callable[[BenchResult], str]]], list[str]]:
    varying, constant = [], []
    for name, get in _CASE_COLUMNS:
        values = list(dict.fromkeys(get(r) for r in results))
        if len(values) > 1 or name == "impl":
            varying.append((name, get))
        elif values:
            constant.append(_TITLE_FORMAT.get(name, "{}").format(values[0]))
    return varying, constant


def _row_label(r: BenchResult, varying: Sequence[tuple[str, Callable[[BenchResult], str]]]) -> str:
    return " ".join(_TITLE_FORMAT.get(name, "{}").format(get(r)) for name, get in varying) + (" ★" if r.fastest else "")


def results_table(report: BenchReport) -> Table:
    env = report.env
    varying, constant = _split_columns(report.results)
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        title=" · ".join([*constant, f"{env.device_name} ({env.device})", f"cache {env.cache}"]),
        caption="★ fastest implementation of its case · IQR: spread of the middle half of the samples · "
        "peak mem: CUDA max allocated, or RSS growth on CPU",
    )
    for name, _ in varying:
        table.add_column(name, justify="right" if name in ("d_model", "d_ff", "tokens") else "left", no_wrap=True)
    for name in ("median ms", "IQR ms", "n", "tokens/s", "TFLOP/s", "% peak", "peak mem"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("bound")
    for r in report.results:
        cells = [get(r) for _, get in varying]
        if r.fastest:
            cells[[n for n, _ in varying].index("impl")] += " ★"
        table.add_row(
            *cells,
            f"{r.median_ms:.4g}",
            Text(f"{r.iqr_ms:.3g}", style="yellow" if r.noisy else ""),
            str(r.samples),
            fmt_si(r.tokens_per_s),
            f"{r.tflops:.3g}",
            _pct(r),
            _mem(r),
            r.bound or "—",
        )
    return table


def _bar(fraction: float) -> str:
    eighths = round(max(0.0, min(1.0, fraction)) * BAR_WIDTH * 8)
    return "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")


def bars(report: BenchReport) -> Table:
    """One bar per result: % of peak when every result has one, else TFLOP/s against the best."""
    results = report.results
    by_peak = all(r.pct_peak is not None for r in results)
    top = max((r.tflops for r in results), default=0.0) or 1.0
    varying, _ = _split_columns(results)
    table = Table.grid(padding=(0, 1))
    table.add_column()
    table.add_column(style="cyan", no_wrap=True)
    table.add_column(justify="right")
    for r in results:
        fraction = (r.pct_peak or 0.0) / 100 if by_peak else r.tflops / top
        value = f"{r.tflops:.3g} TFLOP/s" + (f" · {r.pct_peak:.1f} % of peak" if r.pct_peak is not None else "")
        table.add_row(_row_label(r, varying), _bar(fraction), value)
    return table


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _env_text(report: BenchReport) -> Text:
    env = report.env
    tf32 = "on" if env.tf32_matmul else "off"
    text = Text.assemble(
        ("env ", "bold"),
        f"torch {env.torch_version}",
        f" · CUDA {env.cuda_version}" if env.cuda_version else "",
        f" · {_plural(env.threads, 'thread')} · TF32 matmul {tf32} · timer {env.timer}",
        f" · cache {env.cache}: {_plural(env.input_buffers, 'input buffer')}",
        f", {fmt_bytes(env.flush_bytes)} flushed between calls" if env.flush_bytes else ", no flush",
        f" · {env.date_utc}",
    )
    for cal in report.calibrations:
        text.append(
            f"\ncalibrated {cal.dtype}: GEMM {cal.gemm_n}³ {cal.gemm_tflops:.3g} TFLOP/s, copy {cal.copy_gbps:.4g} GB/s (read + write)"
        )
    sources = sorted({r.peak_source for r in report.results if r.peak_source})
    if sources:
        text.append("\npeak: " + "; ".join(sources))
    return text


def _checkpoint_table(report: BenchReport) -> Table:
    table = Table(title="gradient checkpointing: memory saved, time cost")
    table.add_column("case")
    names = ("ms without", "ms with", "time cost", "extra mem without", "extra mem with", "saved", "saved (estimate)", "FLOPs model/hw")
    for name in names:
        table.add_column(name, justify="right")
    for d in report.checkpoint:

        def mem(v: int | None) -> str:
            return "—" if v is None else fmt_bytes(v)

        table.add_row(
            d.label,
            f"{d.base_median_ms:.4g}",
            f"{d.ckpt_median_ms:.4g}",
            f"{d.time_cost_pct:+.1f} %",
            mem(d.base_extra_mem_bytes),
            mem(d.ckpt_extra_mem_bytes),
            mem(d.mem_saved_bytes),
            fmt_bytes(d.est_saved_bytes),
            f"{_times_forward(d.model_flops, d)} / {_times_forward(d.hardware_flops, d)}",
        )
    table.caption = "FLOPs in multiples of one forward: model FLOPs (3×, what MFU counts) and the hardware FLOPs the recompute adds"
    return table


def _times_forward(flops: int, d: CheckpointDelta) -> str:
    forward = d.model_flops / 3
    return f"{flops / forward:.3g}×" if forward else "—"


def bench_view(report: BenchReport) -> RenderableType:
    """Everything the terminal shows: the table, the bars, the environment, notes."""
    parts: list[RenderableType] = [results_table(report), bars(report), _env_text(report)]
    if report.checkpoint:
        parts.append(_checkpoint_table(report))
    parts += [Text(f"skipped: {s}", style="dim") for s in report.skipped]
    parts += [Text(f"warning: {w}", style="yellow") for w in report.warnings]
    return Group(*parts)


def _result_dict(r: BenchResult) -> dict[str, Any]:
    data = dataclasses.asdict(r)
    data["label"] = r.label
    data["samples_ms"] = list(r.samples_ms)
    return data


def bench_json(report: BenchReport) -> dict[str, Any]:
    return {
        "results": [_result_dict(r) for r in report.results],
        "env": dataclasses.asdict(report.env),
        "calibration": [dataclasses.asdict(c) for c in report.calibrations],
        "checkpoint": [dataclasses.asdict(d) for d in report.checkpoint],
        "skipped": list(report.skipped),
        "warnings": list(report.warnings),
    }


# --- plot file ---------------------------------------------------------------------------


def check_plot_target(path: str) -> Path:
    """Refuse a plot file we could not write, before any timing starts."""
    target = check_output_file("plot", path, PLOT_FORMATS)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise FFNRuntimeError("--plot needs matplotlib: pip install ffn-cli[plot]") from None
    return target


def write_plot(report: BenchReport, path: str) -> Path:
    """Horizontal bars of TFLOP/s per result, written whole or not at all (temp file + rename)."""
    target = check_plot_target(path)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    results = report.results
    varying, constant = _split_columns(results)
    labels = [_row_label(r, varying) for r in results]
    fig = Figure(figsize=(9, 1.2 + 0.4 * len(results)), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.barh(labels, [r.tflops for r in results], color=["tab:orange" if r.fastest else "tab:blue" for r in results])
    ax.invert_yaxis()
    ax.set_xlabel("achieved TFLOP/s (analytic matmul FLOPs / median time)")
    ax.set_title(" · ".join([*constant, report.env.device_name, f"torch {report.env.torch_version}", f"cache {report.env.cache}"]))
    for i, r in enumerate(results):
        note = f" {r.median_ms:.3g} ms" + (f", {r.pct_peak:.0f} % of peak" if r.pct_peak is not None else "")
        ax.annotate(note, (r.tflops, i), va="center", fontsize=8)
    return write_atomically(target, lambda tmp: fig.savefig(tmp, format=target.suffix.lstrip(".").lower()))
