#!/usr/bin/env bash
# One-shot GPU check: the independent anchor harness and `ffn bench` in the same call, on
# SwiGLU, bf16, 8192 tokens, d_model 4096, d_ff 14336, then a comparison (compare_anchor.py).
# Ends within about 8.5 minutes on an H200: each step has a time limit inside one budget.
#
#   bash benchmarks/gpu_check.sh [ANCHOR_PY]      from the repository root; ANCHOR_PY defaults
#                                                 to benchmarks/gpu_ffn_anchor.py
#   FFN_CHECK_DRY_RUN=1 bash benchmarks/gpu_check.sh
#                                                 tiny sizes on CPU: tests this script, measures nothing
#
# Writes into $OUT (a temporary folder when unset), at most 8 files: anchor.json, log.txt,
# bench_fwd.json, bench_compile.json, bench_bwd.json, bench_fused_autotune.json, bench_autotune.json,
# summary.json. Compiled runs get their own steps, so a slow compile cannot lose the eager times.
# The CUDA tests (pytest -m cuda) run too, into log.txt.
set -uo pipefail
cd "$(dirname "$0")/.."

ANCHOR=${1:-benchmarks/gpu_ffn_anchor.py}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export OUT PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
LOG="$OUT/log.txt"
BUDGET_S=500
START=$SECONDS

if [[ -n "${FFN_CHECK_DRY_RUN:-}" ]]; then
    # The anchor's own CPU sizes (it picks them when it sees no GPU).
    CASE=(--variant swiglu --d-model 256 --d-ff 688 --batch 1 --seq-len 512 --dtype float32 --device cpu)
    FWD_IMPLS=eager,fused
    COMPILE_IMPLS=""
    AUTOTUNE=""
else
    CASE=(--variant swiglu --d-model 4096 --d-ff 14336 --batch 1 --seq-len 8192 --dtype bfloat16 --device cuda)
    FWD_IMPLS=eager,fused
    COMPILE_IMPLS=compile,fused-compile
    AUTOTUNE=1
fi

left() { echo $((BUDGET_S - (SECONDS - START))); }

# step NAME LIMIT_S COMMAND...: run with a time limit; stdout to $OUT/NAME.json, stderr to the log.
step() {
    local name=$1 limit=$2
    shift 2
    if ((limit < 20)); then
        echo "== $name: skipped, $(left) s of the budget left" | tee -a "$LOG"
        return
    fi
    echo "== $name (limit ${limit} s): $*" | tee -a "$LOG"
    local t0=$SECONDS
    timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.json" 2>>"$LOG"
    local rc=$?
    echo "   $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$LOG"
    if ((rc != 0)); then
        tail -n 3 "$LOG"
        [[ -s "$OUT/$name.json" ]] || rm -f "$OUT/$name.json"
    fi
}

min() { echo $(($1 < $2 ? $1 : $2)); }

{
    date -u +"start %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1 || true
    "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())"
    "$PY" -m pip list 2>/dev/null | grep -iE '^(torch|triton|typer|click|rich|numpy|pytest|hypothesis) ' || true
} >>"$LOG" 2>&1

# ffn needs typer, rich and numpy beside torch (the anchor needs torch alone): say so at once
# rather than let every bench step fail the same way.
if ! "$PY" -c "from ffn_cli.cli import app" >>"$LOG" 2>&1; then
    echo "== ffn_cli cannot be imported (it needs typer, rich and numpy beside torch): only the anchor runs" | tee -a "$LOG"
    NO_FFN=1
fi

# anchor [ENV=VALUE ...]: the anchor harness with a time limit; it writes $OUT/anchor.json at its end.
anchor() {
    echo "== anchor${*:+ ($*)}: $ANCHOR" | tee -a "$LOG"
    local t0=$SECONDS
    env "$@" timeout --kill-after=10 "$(min 110 "$(left)")" "$PY" "$ANCHOR" >>"$LOG" 2>&1
    echo "   anchor: exit $? after $((SECONDS - t0)) s" | tee -a "$LOG"
}
rm -f "$OUT/anchor.json"  # a folder used before must not hide a failed run
anchor
# Its compiled case is the one most likely to fail: without it the eager times still compare.
[[ -s "$OUT/anchor.json" ]] || anchor NO_COMPILE=1

# --debug: a failure here shows its whole traceback in the log, not one line.
BENCH=("$PY" -m ffn_cli --debug bench "${CASE[@]}" --cache cold --json)
if [[ -n "${NO_FFN:-}" ]]; then
    echo "done after $((SECONDS - START)) s; files in $OUT"
    exit 1
fi
step bench_fwd "$(min 60 "$(left)")" "${BENCH[@]}" --impl "$FWD_IMPLS" --calibrate
[[ -n "$COMPILE_IMPLS" ]] && step bench_compile "$(min 120 "$(left)")" "${BENCH[@]}" --impl "$COMPILE_IMPLS" --calibrate
step bench_bwd "$(min 60 "$(left)")" "${BENCH[@]}" --impl eager,fused --backward --checkpoint --calibrate
if [[ -n "$AUTOTUNE" ]]; then
    # Autotuning benchmarks many GEMM kernels while it compiles: minutes, so one impl per process.
    step bench_fused_autotune "$(min 200 $(($(left) - 110)))" "${BENCH[@]}" --impl fused-autotune --calibrate
fi
# The dry run only collects them: without CUDA they would all skip.
TESTS=("$PY" -m pytest -q -m cuda -p no:cacheprovider tests ${FFN_CHECK_DRY_RUN:+--collect-only})
limit=$(min 90 $(($(left) - 20)))
if ((limit >= 20)); then
    echo "== CUDA tests (limit ${limit} s): ${TESTS[*]}" | tee -a "$LOG"
    timeout --kill-after=10 "$limit" "${TESTS[@]}" >>"$LOG" 2>&1
    echo "   CUDA tests: exit $?" | tee -a "$LOG"
    tail -n 2 "$LOG"
fi
if [[ -n "$AUTOTUNE" ]]; then
    step bench_autotune "$(($(left) - 15))" "${BENCH[@]}" --impl autotune --calibrate
fi

echo "== compare (after $((SECONDS - START)) s)" | tee -a "$LOG"
shopt -s nullglob
"$PY" benchmarks/compare_anchor.py "$OUT/anchor.json" "$OUT"/bench_*.json --summary "$OUT/summary.json"
echo "done after $((SECONDS - START)) s; files in $OUT"
