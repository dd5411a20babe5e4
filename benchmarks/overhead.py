"""What `ffn` adds on top of the work it shows: each command against its yardstick, as whole
processes, paired run by run.

    python benchmarks/overhead.py [--rounds 5] [--only trace-cpu,params,...] [--no-write]

Each row runs the `ffn` command and its yardstick alternately (ffn first in odd rounds, the
yardstick first in even ones), so drift and other programs' load fall on both alike. Reported:
the median wall time of each; the ratio, as the median of the per-round ratios (each round's
two runs are next to each other in time, so they met the same load); the ratio of the fastest
runs (the least disturbed); and the median peak resident set of each (from wait4's rusage:
the child's own high-water mark). Both run with Python's bytecode cache, as an installed
package does. `ffn bench` is held against a bare timed loop by cpu_vs_bare_loop.py, in its
own interleaved rounds. The table, with the date and the machine, replaces the overhead
section of docs/benchmarks.md unless --no-write.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- overhead:start -->", "<!-- overhead:end -->"
PY = sys.executable
FFN = [PY, "-m", "ffn_cli"]
TRACE_CPU = ["trace", "--variant", "swiglu", "--d-model", "2048", "--d-ff", "5632", "--batch", "2", "--seq-len", "256"]
TRACE_META = [
    "trace",
    "--variant",
    "swiglu",
    "--d-model",
    "8192",
    "--d-ff",
    "28672",
    "--batch",
    "8",
    "--seq-len",
    "4096",
    "--device",
    "meta",
]
# `ffn` without its entry point (ffn_cli.cli.main): the Typer app alone, so the collector runs as
# Python runs it, nothing frozen after start-up or at exit.
UNFROZEN = [PY, "-c", "import sys; sys.argv[0] = 'ffn'; from ffn_cli.cli import app; app()"]
PAGE = str(Path(tempfile.gettempdir()) / "ffn-overhead-page.html")
IMPORT_FLOOR = [PY, "-c", "import typer, rich.console, rich.table"]
# A Typer app with one option, parsed: the floor of any command (Typer coerces options through pydantic).
TYPER_FLOOR = [
    PY,
    "-c",
    "import typer, rich.console, rich.table\n"
    "app = typer.Typer()\n"
    "@app.command()\n"
    "def main(variant: str = 'relu', d_model: int = 512) -> None:\n"
    "    rich.console.Console().print(rich.table.Table(variant))\n"
    "app()",
    "--variant",
    "swiglu",
]


@dataclass(frozen=True)
class Row:
    """One comparison: a command, its yardstick, and the ratio the issue asks for."""

    key: str
    case: str
    command: list[str]
    yardstick: list[str]
    yardstick_text: str
    target: float | None
    rss_target: float | None = None
    exit_code: int = 0  # what both sides exit with (2: a usage error, refused)


ROWS = [
    Row(
        "trace-default",
        "`ffn trace` (no options: relu, d_model 512, CPU)",
        [*FFN, "trace"],
        [PY, "-c", "import torch"],
        '`python -c "import torch"`',
        1.3,
    ),
    Row(
        "trace-default-flopcounter",
        "`ffn trace` (no options) against torch's own counter",
        [*FFN, "trace"],
        [PY, str(ROOT / "benchmarks" / "flop_counter_forward.py")],
        "flop_counter_forward.py: the same forward under FlopCounterMode",
        None,
    ),
    Row(
        "trace-default-python-gc",
        "`ffn trace` (no options) against itself, collector as Python runs it",
        [*FFN, "trace"],
        [*UNFROZEN, "trace"],
        "the same command run by the Typer app alone: nothing frozen after start-up or at exit",
        None,
    ),
    Row(
        "trace-backward",
        "`ffn trace --backward` against the plain one",
        [*FFN, "trace", "--backward"],
        [*FFN, "trace"],
        "`ffn trace`",
        1.3,
    ),
    Row("trace-page", "`ffn trace --page F` against the plain one", [*FFN, "trace", "--page", PAGE], [*FFN, "trace"], "`ffn trace`", 1.3),
    Row("trace-block", "`ffn trace --block` against the plain one", [*FFN, "trace", "--block"], [*FFN, "trace"], "`ffn trace`", 1.3),
    Row(
        "trace-mistyped",
        "`ffn trace --variant swigl` (refused, exit 2)",
        [*FFN, "trace", "--variant", "swigl"],
        [*FFN, "params", "--variant", "swigl"],
        "`ffn params --variant swigl` (the same mistake)",
        1.2,
        exit_code=2,
    ),
    Row(
        "trace-cpu",
        "`ffn trace -v swiglu -d 2048 --d-ff 5632 -b 2 -s 256` (CPU)",
        FFN + TRACE_CPU,
        [PY, str(ROOT / "benchmarks" / "bare_forward.py")],
        "bare_forward.py: the same Linears, one forward under inference_mode, mean/std",
        1.3,
        1.2,
    ),
    Row(
        "trace-meta",
        "`ffn trace -v swiglu -d 8192 --d-ff 28672 -b 8 -s 4096 --device meta`",
        FFN + TRACE_META,
        [PY, "-c", "import torch"],
        '`python -c "import torch"`',
        1.3,
    ),
    Row(
        "trace-meta-forward",
        "the same meta trace against the bare meta forward",
        FFN + TRACE_META,
        [
            PY,
            str(ROOT / "benchmarks" / "bare_forward.py"),
            "--device",
            "meta",
            "--d-model",
            "8192",
            "--d-ff",
            "28672",
            "--batch",
            "8",
            "--seq-len",
            "4096",
        ],
        "bare_forward.py --device meta: the same forward on meta",
        1.1,
    ),
    Row(
        "params",
        "`ffn params --variant swiglu`",
        [*FFN, "params", "--variant", "swiglu"],
        IMPORT_FLOOR,
        "`import typer, rich.console, rich.table`",
        1.5,
    ),
    Row(
        "params-typer",
        "`ffn params --variant swiglu` (context)",
        [*FFN, "params", "--variant", "swiglu"],
        TYPER_FLOOR,
        "a one-option Typer app that prints a table",
        None,
    ),
    Row(
        "params-typer40",
        "`ffn params --variant swiglu` (40-option yardstick)",
        [*FFN, "params", "--variant", "swiglu"],
        [PY, str(ROOT / "benchmarks" / "typer_yardstick.py"), "--variant", "swiglu"],
        "typer_yardstick.py: a 40-option Typer + rich command printing one table",
        1.15,
    ),
    Row(
        "params-typer40-as-ffn",
        "`ffn params --variant swiglu` (context: both run the collector as `ffn` does)",
        [*FFN, "params", "--variant", "swiglu"],
        [PY, str(ROOT / "benchmarks" / "typer_yardstick.py"), "--collector-as-ffn", "--variant", "swiglu"],
        "typer_yardstick.py --collector-as-ffn: the same, frozen after start-up and at exit",
        None,
    ),
    Row("variants", "`ffn variants`", [*FFN, "variants"], IMPORT_FLOOR, "`import typer, rich.console, rich.table`", None),
    Row("help", "`ffn --help`", [*FFN, "--help"], IMPORT_FLOOR, "`import typer, rich.console, rich.table`", None),
]


@dataclass(frozen=True)
class Run:
    seconds: float
    max_rss_bytes: int


def run_once(command: list[str], exit_code: int = 0) -> Run:
    """Run a whole process; its wall time and its own peak resident set (rusage via wait4)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    # Compiled bytecode cached for both sides, as an installed package has it (its libraries'
    # caches were written at install): without this, ffn's own modules would be compiled from
    # source on every run where the environment sets PYTHONDONTWRITEBYTECODE.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != exit_code:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): {err.decode(errors='replace')[-500:]}")
    return Run(seconds, usage.ru_maxrss * 1024)  # ru_maxrss is in KiB on Linux


@dataclass(frozen=True)
class Result:
    row: Row
    ffn: list[Run]
    yardstick: list[Run]

    @property
    def ffn_s(self) -> float:
        return statistics.median(r.seconds for r in self.ffn)

    @property
    def yardstick_s(self) -> float:
        return statistics.median(r.seconds for r in self.yardstick)

    @property
    def ratio(self) -> float:
        """The median of the per-round ratios."""
        return statistics.median(f.seconds / y.seconds for f, y in zip(self.ffn, self.yardstick, strict=True))

    @property
    def ratio_of_fastest(self) -> float:
        return min(r.seconds for r in self.ffn) / min(r.seconds for r in self.yardstick)

    @property
    def ffn_rss(self) -> float:
        return statistics.median(r.max_rss_bytes for r in self.ffn)

    @property
    def yardstick_rss(self) -> float:
        return statistics.median(r.max_rss_bytes for r in self.yardstick)


def measure(row: Row, rounds: int) -> Result:
    ffn: list[Run] = []
    yardstick: list[Run] = []
    run_once(row.command, row.exit_code)  # warm the file cache for both before anything is timed
    run_once(row.yardstick, row.exit_code)
    for r in range(rounds):
        pair = [(row.command, ffn), (row.yardstick, yardstick)]
        for command, runs in pair if r % 2 == 0 else pair[::-1]:
            runs.append(run_once(command, row.exit_code))
    result = Result(row, ffn, yardstick)
    print(
        f"{row.key:20s} ffn {result.ffn_s:6.2f} s  yardstick {result.yardstick_s:6.2f} s"
        f"  ratio {result.ratio:5.2f} (fastest {result.ratio_of_fastest:4.2f})   peak RSS {result.ffn_rss / 2**20:6.0f}"
        f" / {result.yardstick_rss / 2**20:6.0f} MiB ({result.ffn_rss / result.yardstick_rss:4.2f})",
        flush=True,
    )
    return result


def bench_row(rounds: int) -> dict[str, float]:
    """`ffn bench` against a bare loop: cpu_vs_bare_loop.py's median per-round ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        script = ROOT / "benchmarks" / "cpu_vs_bare_loop.py"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run(
            [PY, str(script), "--rounds", str(rounds), "--json", str(out)], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
        )
        summary = json.loads(out.read_text())
    print(
        f"{'bench':20s} ffn {summary['ffn_bench_median_ms']:.3f} ms  bare {summary['bare_loop_median_ms']:.3f} ms"
        f"  ratio {summary['ratio_median']:.3f}",
        flush=True,
    )
    return summary


def machine() -> str:
    model = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, {_versions()}"


def _versions() -> str:
    code = "from importlib.metadata import version as v; print(', '.join(f'{p} {v(p)}' for p in ('torch', 'typer', 'rich')))"
    return subprocess.run([PY, "-c", code], capture_output=True, text=True).stdout.strip()


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _verdict(ratio: float, target: float | None) -> str:
    if target is None:
        return "(context)"
    return f"≤ {target:g}× {'✓' if ratio <= target else '✗ missed'}"


def table(results: list[Result], bench: dict[str, float] | None, *, rounds: int, load_before: str, load_after: str) -> str:
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        START,
        f"Measured {date} by `python benchmarks/overhead.py --rounds {rounds}` on {machine()}; load average "
        f"(1, 5, 15 min) {load_before} before and {load_after} after. {rounds} rounds, each running the two"
        " back to back in alternating order: median times; the ratio is the median of the rounds' ratios,"
        " beside the ratio of the fastest runs.",
        "",
        "| case | ffn | yardstick | ratio (target) | fastest runs | peak RSS ffn / yardstick |",
        "|---|---|---|---|---|---|",
    ]
    for res in results:
        row = res.row
        ratio = res.ratio
        rss_ratio = res.ffn_rss / res.yardstick_rss
        rss = f"{res.ffn_rss / 2**20:.0f} / {res.yardstick_rss / 2**20:.0f} MiB: {rss_ratio:.2f}×"
        if row.rss_target is not None:
            rss += f" ({_verdict(rss_ratio, row.rss_target)})"
        yardstick = f"{row.yardstick_text}: {res.yardstick_s:.2f} s"
        verdict = f"**{ratio:.2f}×** {_verdict(ratio, row.target)}"
        lines.append(f"| {row.case} | {res.ffn_s:.2f} s | {yardstick} | {verdict} | {res.ratio_of_fastest:.2f}× | {rss} |")
    if bench is not None:
        ratio = bench["ratio_median"]
        verdict = "✓" if abs(ratio - 1) <= 0.05 else "✗ missed"
        lines.append(
            f"| `ffn bench` (CPU) median, {bench['case']} | {bench['ffn_bench_median_ms']:.3f} ms"
            f" | a bare timed loop over the same module: {bench['bare_loop_median_ms']:.3f} ms"
            f" | **{ratio:.3f}×** {verdict} (within 5 %) | {bench['ratio_of_minima']:.3f}× | |"
        )
    lines.append(END)
    return "\n".join(lines)


def write(section: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n## The tool's own overhead\n\n" + section + "\n"
    DOC.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", help="comma-separated row keys: " + ", ".join(r.key for r in ROWS) + ", bench")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    keys = set(args.only.split(",")) if args.only else {r.key for r in ROWS} | {"bench"}
    load_before = load()
    results = [measure(row, args.rounds) for row in ROWS if row.key in keys]
    bench = bench_row(args.rounds) if "bench" in keys else None
    section = table(results, bench, rounds=args.rounds, load_before=load_before, load_after=load())
    print(section)
    if not args.no_write:
        write(section)


if __name__ == "__main__":
    main()
