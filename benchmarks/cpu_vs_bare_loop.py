"""Does `ffn bench` on CPU agree with a bare torch loop over the same module, within noise?

    python benchmarks/cpu_vs_bare_loop.py [--variant swiglu] [--d-model 1024] [--d-ff 2816]
        [--tokens 256] [--threads 1] [--rounds 7] [--repeats 30] [--backward] [--json FILE]

Each round times the two back to back, in alternating order, so drift and other programs'
load fall on both alike: `run_bench` (cache hot: one input, as the bare loop) and a loop of
`perf_counter` around `module(x)` under inference_mode (with backward: `y.backward(g)` after
resetting grads). Agreement: the median of the per-round ratios lies within the spread of the
per-round ratios (their IQR), or within 3 %, whichever is wider. The fastest call of each
(least disturbed by other programs) is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import datetime, timezone

import torch

from ffn_cli.benchmark import BenchConfig
from ffn_cli.benchmark.run import run_bench
from ffn_cli.modules import build_ffn
from ffn_cli.spec import FFNSpec

MIN_TOLERANCE = 0.03


def bare_loop_ms(spec: FFNSpec, *, tokens: int, repeats: int, warmup: int, backward: bool, seed: int = 0) -> tuple[float, float]:
    """The plainest honest timing: same weights (same seed), one input; (median, min) of repeats."""
    module = build_ffn(spec, seed=seed).train(backward)
    torch.manual_seed(seed + 1)
    x = torch.randn(1, tokens, spec.d_model, requires_grad=backward)
    g = torch.randn(1, tokens, spec.d_model)
    samples = []
    with torch.inference_mode(not backward):
        for i in range(warmup + repeats):
            module.zero_grad(set_to_none=True)
            x.grad = None
            t0 = time.perf_counter_ns()
            y = module(x)
            if backward:
                y.backward(g)
            if i >= warmup:
                samples.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(samples), min(samples)


def ffn_bench_ms(spec: FFNSpec, *, tokens: int, repeats: int, backward: bool) -> tuple[float, float]:
    """(median, min) as run_bench reports them."""
    config = BenchConfig(backward=backward, cache="hot", repeats=repeats, warmup_ms=50.0)
    (result,) = run_bench(specs=[spec], batch=1, seq_lens=(tokens,), config=config).results
    return result.median_ms, result.min_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="swiglu")
    parser.add_argument("--d-model", type=int, default=1024)
    parser.add_argument("--d-ff", type=int, default=2816)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--backward", action="store_true")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)  # run_bench keeps the count it finds
    spec = FFNSpec(variant=args.variant, d_model=args.d_model, d_ff=args.d_ff)
    bench_ms, bare_ms, bench_min, bare_min = [], [], [], []
    for r in range(args.rounds):
        order = ("bench", "bare") if r % 2 == 0 else ("bare", "bench")
        for which in order:
            if which == "bench":
                med, low = ffn_bench_ms(spec, tokens=args.tokens, repeats=args.repeats, backward=args.backward)
                bench_ms.append(med)
                bench_min.append(low)
            else:
                med, low = bare_loop_ms(spec, tokens=args.tokens, repeats=args.repeats, warmup=3, backward=args.backward)
                bare_ms.append(med)
                bare_min.append(low)
        print(
            f"round {r + 1}: median ffn bench {bench_ms[-1]:8.3f} ms, bare {bare_ms[-1]:8.3f} ms, ratio {bench_ms[-1] / bare_ms[-1]:.3f}"
            f"   min {bench_min[-1]:8.3f} / {bare_min[-1]:8.3f} ms"
        )

    ratios = [b / a for b, a in zip(bench_ms, bare_ms, strict=True)]
    q1, median_ratio, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    tolerance = max(MIN_TOLERANCE, q3 - q1)
    agree = abs(median_ratio - 1) <= tolerance
    summary = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": f"{_cpu_model()}, {torch.get_num_threads()} thread(s), load average {_load()} at the end",
        "torch": torch.__version__,
        "case": f"{args.variant} d_model {args.d_model} d_ff {args.d_ff}, {args.tokens} tokens, float32, "
        + ("forward+backward" if args.backward else "forward"),
        "ffn_bench_median_ms": statistics.median(bench_ms),
        "bare_loop_median_ms": statistics.median(bare_ms),
        "ffn_bench_min_ms": min(bench_min),
        "bare_loop_min_ms": min(bare_min),
        "ratio_of_minima": min(bench_min) / min(bare_min),
        "ratio_median": median_ratio,
        "ratio_iqr": q3 - q1,
        "tolerance": tolerance,
        "agree": agree,
        "rounds": [
            {"ffn_bench_ms": b, "bare_loop_ms": a, "ffn_bench_min_ms": bm, "bare_loop_min_ms": am}
            for b, a, bm, am in zip(bench_ms, bare_ms, bench_min, bare_min, strict=True)
        ],
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    print(
        f"{summary['case']}: ffn bench {summary['ffn_bench_median_ms']:.3f} ms, bare loop {summary['bare_loop_median_ms']:.3f} ms; "
        f"ratio {median_ratio:.3f} (IQR {q3 - q1:.3f}) → {'agree' if agree else 'DISAGREE'} within {tolerance:.1%}; "
        f"fastest calls {min(bench_min):.3f} / {min(bare_min):.3f} ms (ratio {summary['ratio_of_minima']:.3f})"
    )


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), platform.machine())
    except OSError:
        return platform.processor() or platform.machine()


def _load() -> str:
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
