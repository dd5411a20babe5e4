"""Forecasts held to measurement on this CPU, one thread: profile the device in one process
(`ffn hardware --measure --threads 1`), then time a sweep with `ffn bench` in another, each case
forecast from the saved profile before it runs; then the same variants at token counts between
the profile's grid points. Prints the tables docs/benchmarks.md carries: predicted vs measured
per case, the mean and worst error, every case whose bound exceeded its measured time.

    python3 benchmarks/predict_validation.py [--cache-dir DIR] [--min-time SECONDS]
"""

from __future__ import annotations

import argparse
import json
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


def _sweep(seq_lens: str, min_time: str, env: dict[str, str], title: str) -> None:
    """One sweep timed by `ffn bench`, each case beside its forecast, as a table."""
    sweep = ["bench", "-v", VARIANTS, "-d", WIDTHS, "-b", "1", "-s", seq_lens, "--threads", "1", "--min-time", min_time]
    report = _ffn([*sweep, "--max-cases", "100"], env)
    rows = [r for r in report["results"] if r["predicted_ms"] is not None]
    print(f"\n### {title} (tokens {seq_lens}; load average at start {report['env']['load_avg_1m']})\n")
    print("| case | measured ms | predicted ms | error % | bound ms |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['label']} | {r['median_ms']:.4g} | {r['predicted_ms']:.4g} | {r['prediction_error_pct']:+.1f} | {r['bound_ms']:.4g} |")
    errors = [abs(r["prediction_error_pct"]) for r in rows]
    worst = max(rows, key=lambda r: abs(r["prediction_error_pct"]))
    mean, error = sum(errors) / len(errors), worst["prediction_error_pct"]
    print(f"\n- {len(rows)} cases: mean |error| {mean:.1f} %, worst {error:+.1f} % ({worst['label']})")
    above = [r["label"] for r in report["results"] if r["bound_ms"] is not None and r["bound_ms"] > r["median_ms"]]
    print("- bound above measured: " + (", ".join(above) if above else "none"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache-dir", default=None, help="XDG_CACHE_HOME for the profile (default: a new temporary one)")
    parser.add_argument("--min-time", default="0.3", help="seconds of timed calls per case (ffn bench --min-time)")
    opts = parser.parse_args()
    env = dict(os.environ, XDG_CACHE_HOME=opts.cache_dir or tempfile.mkdtemp(prefix="ffn-validate-"))
    profile = _ffn(["hardware", "--measure", "--threads", "1"], env)
    print(f"profile: {profile['path']} ({profile['seconds_taken']:.0f} s, {profile['device_name']})")
    _sweep(SEQ_LENS, opts.min_time, env, "The sweep")
    _sweep(OFF_GRID_SEQ_LENS, opts.min_time, env, "Between the grid's token counts")


if __name__ == "__main__":
    main()
