"""Hold `ffn bench --json` results against the independent anchor harness (anchor.json).

    python benchmarks/compare_anchor.py anchor.json bench_fwd.json [bench_bwd.json ...] [--summary summary.json]

Checks, for the same case run in the same call: each matched time within 5 % of the anchor's;
eager forward at least 84.7 % of the measured GEMM peak (what a plain three-Linear SwiGLU
reaches on an H200); the best forward implementation at 90 % or more. Prints a table last;
exits 1 only when there is nothing to compare.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TIME_TOLERANCE = 0.05
EAGER_TARGET_PCT = 84.7
BEST_TARGET_PCT = 90.0

RESULT_KEYS = ("impl", "mode", "dtype", "tokens", "d_model", "d_ff", "median_ms", "iqr_ms", "samples", "tflops", "pct_peak")

# (anchor case prefix, anchor mode) ↔ (ffn bench impl, ffn bench mode)
PAIRS = (
    ("swiglu 3-linear", "eager fwd", "eager", "forward"),
    ("swiglu fused", "eager fwd", "fused", "forward"),
    ("swiglu fused", "compiled fwd", "fused-compile", "forward"),
    ("swiglu 3-linear", "eager fwd+bwd", "eager", "forward+backward"),
    ("swiglu fused", "eager fwd+bwd", "fused", "forward+backward"),
)


def _load(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"note: {path}: {exc}")
        return None


def _bench_results(paths: list[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    results, calibrations, env = [], [], {}
    for path in paths:
        data = _load(path)
        if not data:
            continue
        results += [r for r in data.get("results", []) if not r.get("checkpoint")]
        calibrations += data.get("calibration", [])
        env = env or data.get("env", {})
    return results, calibrations, env


def _find(results: list[dict[str, Any]], impl: str, mode: str) -> dict[str, Any] | None:
    return next((r for r in results if r["impl"] == impl and r["mode"] == mode), None)


def _time_checks(anchor: dict[str, Any], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checks = []
    for case, anchor_mode, impl, mode in PAIRS:
        a = next((x for x in anchor.get("ffn", []) if x["case"].startswith(case) and x["mode"] == anchor_mode), None)
        r = _find(results, impl, mode)
        if a is None or r is None:
            continue
        diff = r["median_ms"] / a["ms"] - 1
        checks.append(
            {
                "what": f"{case} {anchor_mode} ↔ ffn {impl} {mode}",
                "anchor_ms": a["ms"],
                "ffn_ms": r["median_ms"],
                "ffn_iqr_ms": r["iqr_ms"],
                "diff": diff,
                "ok": abs(diff) <= TIME_TOLERANCE,
            }
        )
    return checks


def _gemm_peak(calibrations: list[dict[str, Any]], anchor: dict[str, Any], dtype: str) -> tuple[float | None, str]:
    cal = next((c for c in calibrations if c["dtype"] == dtype), None)
    if cal is not None:
        return cal["gemm_tflops"], f"ffn bench --calibrate, {dtype} GEMM {cal['gemm_n']}³"
    gemm = anchor.get("gemm")
    if gemm:
        return gemm["tflops_median"], f"anchor GEMM {gemm['n']}³"
    return None, "none"


def _target(name: str, r: dict[str, Any] | None, peak: float | None, target_pct: float) -> dict[str, Any]:
    if r is None or not peak:
        return {"what": name, "ok": None, "note": "no result or no measured GEMM peak"}
    pct = 100 * r["tflops"] / peak
    return {"what": name, "impl": r["impl"], "tflops": r["tflops"], "pct_of_gemm": pct, "target_pct": target_pct, "ok": pct >= target_pct}


def _verdict(ok: bool | None) -> str:
    return {True: "PASS", False: "FAIL", None: "n/a"}[ok]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("anchor", type=Path)
    parser.add_argument("bench", type=Path, nargs="*")
    parser.add_argument("--summary", type=Path, help="also write the comparison as JSON here")
    args = parser.parse_args()

    anchor = _load(args.anchor) or {}
    results, calibrations, env = _bench_results(args.bench)
    if not results:
        print("nothing to compare: no ffn bench results")
        return 1
    dtype = results[0]["dtype"]
    peak, peak_source = _gemm_peak(calibrations, anchor, dtype)
    forward = [r for r in results if r["mode"] == "forward"]
    best = max(forward, key=lambda r: r["tflops"], default=None)
    summary = {
        "device": env.get("device_name"),
        "torch": env.get("torch_version"),
        "date_utc": env.get("date_utc"),
        "anchor_device": anchor.get("device"),
        "anchor_gemm_tflops": (anchor.get("gemm") or {}).get("tflops_median"),
        "gemm_peak_tflops": peak,
        "gemm_peak_source": peak_source,
        "times": _time_checks(anchor, results),
        "targets": [
            _target("eager forward ≥ 84.7 % of GEMM peak", _find(results, "eager", "forward"), peak, EAGER_TARGET_PCT),
            _target("best forward ≥ 90 % of GEMM peak", best, peak, BEST_TARGET_PCT),
        ],
        "results": [{k: r[k] for k in RESULT_KEYS} for r in results],
    }
    if args.summary:
        args.summary.write_text(json.dumps(summary, indent=1))
    _print(summary)
    return 0


def _print(s: dict[str, Any]) -> None:
    print(f"\nffn bench on {s['device']} (torch {s['torch']}, {s['date_utc']}); anchor on {s['anchor_device']}")
    anchor_gemm = s["anchor_gemm_tflops"]
    print(f"GEMM peak {s['gemm_peak_tflops'] or 0:.4g} TFLOP/s ({s['gemm_peak_source']}); anchor GEMM {anchor_gemm or 0:.4g} TFLOP/s")
    print(f"\n{'impl':16} {'mode':17} {'median ms':>10} {'IQR ms':>8} {'n':>5} {'TFLOP/s':>8} {'% GEMM':>7}")
    for r in s["results"]:
        pct = 100 * r["tflops"] / s["gemm_peak_tflops"] if s["gemm_peak_tflops"] else float("nan")
        print(f"{r['impl']:16} {r['mode']:17} {r['median_ms']:10.3f} {r['iqr_ms']:8.3f} {r['samples']:5d} {r['tflops']:8.4g} {pct:6.1f}%")
    print(f"\ntimes against the anchor (tolerance {TIME_TOLERANCE:.0%}):")
    for c in s["times"]:
        print(f"  {_verdict(c['ok'])}  {c['what']:62} anchor {c['anchor_ms']:8.3f} ms  ffn {c['ffn_ms']:8.3f} ms  {c['diff']:+6.1%}")
    if not s["times"]:
        print("  n/a  no anchor result to match")
    print("targets:")
    for t in s["targets"]:
        detail = f"{t['impl']}: {t['tflops']:.4g} TFLOP/s = {t['pct_of_gemm']:.1f} %" if "pct_of_gemm" in t else t["note"]
        print(f"  {_verdict(t['ok'])}  {t['what']:40} {detail}")


if __name__ == "__main__":
    sys.exit(main())
