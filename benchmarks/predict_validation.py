"""Forecasts held to measurement on this CPU, one thread: profile the device in one process
(`ffn hardware --measure --threads 1`), then time a sweep with `ffn bench` in another, each case
forecast from the saved profile before it runs; then the same variants at token counts between
the profile's grid points. Prints the tables docs/benchmarks.md carries: predicted vs measured
per case, the mean and worst error, every case whose bound exceeded its measured time.

Each sweep runs --rounds times, the two sweeps taking turns, and a case is measured by its
fastest round's median: a spell of load elsewhere only ever slows a case, as the profile keeps
each point's fastest pass. The error of the first round alone is printed beside it.

    python3 benchmarks/predict_validation.py [--cache-dir DIR] [--min-time SECONDS] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

VARIANTS = "relu,gelu,swiglu,geglu,reglu"
WIDTHS = "256,512"
SEQ_LENS = "1,16,128,512"  # tokens: batch 1 × these
# The same variants at token counts between the profile's grid points: how well it interpolates.
OFF_GRID_SEQ_LENS = "2,24,96,384"


def _ffn(args: list[str], env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-m", "ffn_cli", *args, "--json"], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def _bench(seq_lens: str, min_time: str, env: dict[str, str]) -> dict:
    sweep = ["bench", "-v", VARIANTS, "-d", WIDTHS, "-b", "1", "-s", seq_lens, "--threads", "1", "--min-time", min_time]
    return _ffn([*sweep, "--max-cases", "100"], env)


def _mean_error(rows: list[dict]) -> float:
    return sum(abs(r["prediction_error_pct"]) for r in rows) / len(rows)


def _report(seq_lens: str, reports: list[dict], title: str) -> None:
    """One sweep's rounds as a table: each case at its fastest round, beside its forecast."""
    rounds = [[r for r in report["results"] if r["predicted_ms"] is not None] for report in reports]
    rows = [min(runs, key=lambda r: r["median_ms"]) for runs in zip(*rounds, strict=True)]
    loads = ", ".join(f"{report['env']['load_avg_1m']:.2f}" for report in reports)
    print(f"\n### {title} (tokens {seq_lens}; {len(reports)} rounds, load average at their starts {loads})\n")
    print("| case | measured ms | predicted ms | error % | bound ms | rounds' medians ms |")
    print("|---|---:|---:|---:|---:|---|")
    for r, runs in zip(rows, zip(*rounds, strict=True), strict=True):
        medians = ", ".join(f"{run['median_ms']:.4g}" for run in runs)
        error = f"{r['prediction_error_pct']:+.1f}"
        cells = [r["label"], f"{r['median_ms']:.4g}", f"{r['predicted_ms']:.4g}", error, f"{r['bound_ms']:.4g}"]
        print("| " + " | ".join([*cells, medians]) + " |")
    worst = max(rows, key=lambda r: abs(r["prediction_error_pct"]))
    print(
        f"\n- {len(rows)} cases, each at its fastest round: mean |error| {_mean_error(rows):.1f} %, "
        f"worst {worst['prediction_error_pct']:+.1f} % ({worst['label']})"
    )
    print("- each round alone: mean |error| " + ", ".join(f"{_mean_error(runs):.1f} %" for runs in rounds))
    above = sorted(
        {r["label"] for report in reports for r in report["results"] if r["bound_ms"] is not None and r["bound_ms"] > r["median_ms"]}
    )
    print("- bound above a measured median, in any round: " + (", ".join(above) if above else "none"))


def _left_out(profile: dict) -> None:
    """Each interior point of the profile's GEMM grid forecast from its neighbours two grid steps
    apart, with the time trilinear (the forecast's rule) and with the rate log-linear (the rule
    it replaced), against the point's own measurement."""
    times = {(p["m"], p["n"], p["k"]): p["seconds"] for p in profile["gemm"]["fp32"]}
    axes = [sorted({key[i] for key in times}) for i in range(3)]
    linear: list[float] = []
    log_rate: list[float] = []
    for axis, values in enumerate(axes):
        for i in range(1, len(values) - 1):
            lo, mid, hi = values[i - 1], values[i], values[i + 1]
            for key, seconds in times.items():
                if key[axis] != mid:
                    continue
                at = [list(key), list(key)]
                at[0][axis], at[1][axis] = lo, hi
                t_lo, t_hi = times[tuple(at[0])], times[tuple(at[1])]
                w = (mid - lo) / (hi - lo)
                linear.append(((1 - w) * t_lo + w * t_hi) / seconds - 1)
                v = (math.log(mid) - math.log(lo)) / (math.log(hi) - math.log(lo))
                rate = math.exp((1 - v) * math.log(lo / t_lo) + v * math.log(hi / t_hi))  # per unit of the axis
                log_rate.append(mid / rate / seconds - 1)
    for name, errors in (("time linear (the forecast's rule)", linear), ("rate log-linear", log_rate)):
        mean = sum(errors) / len(errors)
        print(f"- grid points left out, {name}: mean {mean:+.1%}, mean |error| {sum(map(abs, errors)) / len(errors):.1%}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache-dir", default=None, help="XDG_CACHE_HOME for the profile (default: a new temporary one)")
    parser.add_argument("--min-time", default="0.3", help="seconds of timed calls per case (ffn bench --min-time)")
    parser.add_argument("--rounds", type=int, default=3, help="times each sweep runs; a case keeps its fastest")
    opts = parser.parse_args()
    env = dict(os.environ, XDG_CACHE_HOME=opts.cache_dir or tempfile.mkdtemp(prefix="ffn-validate-"))
    profile = _ffn(["hardware", "--measure", "--threads", "1"], env)
    print(f"profile: {profile['path']} ({profile['seconds_taken']:.0f} s, {profile['device_name']}, {profile['passes']} passes)")
    _left_out(profile)
    sweeps = {SEQ_LENS: [], OFF_GRID_SEQ_LENS: []}
    for _ in range(opts.rounds):
        for seq_lens, reports in sweeps.items():
            reports.append(_bench(seq_lens, opts.min_time, env))
    _report(SEQ_LENS, sweeps[SEQ_LENS], "The sweep")
    _report(OFF_GRID_SEQ_LENS, sweeps[OFF_GRID_SEQ_LENS], "Between the grid's token counts")


if __name__ == "__main__":
    main()
