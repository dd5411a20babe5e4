#!/usr/bin/env bash
# The test suite on every torch the project supports beyond CI's pinned one: the floor
# pyproject.toml declares (Python 3.10, torch 2.6.0, NumPy 1.24, typer 0.16, rich 14.3.4; no
# transformers, whose 5.x needs a newer torch: its tests skip with their reason) and the newest
# releases PyPI serves (torch, NumPy, typer, rich, transformers). Each in its own virtual
# environment, installed once and reused; the results are recorded in docs/benchmarks.md.
# PyPI's Linux torch wheels are CUDA builds: the first install fetches about 3 GB (torch and
# its NVIDIA libraries) per environment.
#
#   bash scripts/check_floor_versions.sh [floor|newest|both] [VENV_ROOT]
#       from anywhere; VENV_ROOT (default: .venvs in the repository root) holds venv-floor
#       and venv-newest.
#   FLOOR_PYTHON / NEWEST_PYTHON pick the interpreters (default: python3.10, python3).
#   Extra pytest arguments: PYTEST_ARGS="-x tests/test_trace.py".
set -euo pipefail
WHICH=${1:-both}
ROOT=$(realpath -m "${2:-$(dirname "$0")/../.venvs}")  # relative to where it was called from
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1

FLOOR=("torch==2.6.0" "numpy==1.24.4" "typer==0.16.0" "rich==14.3.4")
NEWEST=("torch" "numpy" "typer" "rich" "transformers>=5.0" "huggingface_hub>=1.0")
TOOLS=("pytest>=8" "pytest-xdist>=3.5" "hypothesis>=6.100" "matplotlib>=3.7" "import-linter>=2.1")

run() {  # name python packages...
    local name=$1 py=$2
    shift 2
    local venv="$ROOT/venv-$name"
    if [ ! -x "$venv/bin/python" ]; then
        "$py" -m venv "$venv"
        "$venv/bin/python" -m pip install -q --upgrade pip
    fi
    "$venv/bin/python" -m pip install -q "$@" "${TOOLS[@]}"
    # The project itself without resolving its dependencies again, so the pins stay installed.
    "$venv/bin/python" -m pip install -q --no-deps -e .
    echo "== $name: $("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])')"
    "$venv/bin/python" -m pip list 2>/dev/null | grep -iE '^(torch|numpy|typer|rich|click|pydantic|transformers) '
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pytest -q -m "not slow" -p no:cacheprovider ${PYTEST_ARGS:-}
}

case "$WHICH" in
floor) run floor "${FLOOR_PYTHON:-python3.10}" "${FLOOR[@]}" ;;
newest) run newest "${NEWEST_PYTHON:-python3}" --upgrade "${NEWEST[@]}" ;;
both)
    run floor "${FLOOR_PYTHON:-python3.10}" "${FLOOR[@]}"
    run newest "${NEWEST_PYTHON:-python3}" --upgrade "${NEWEST[@]}"
    ;;
*) echo "usage: $0 [floor|newest|both] [VENV_ROOT]" >&2; exit 2 ;;
esac
