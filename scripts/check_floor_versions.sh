#!/usr/bin/env bash
# The test suite on the oldest releases pyproject.toml admits: Python 3.10, torch 2.4, NumPy
# 1.24, typer 0.16, rich 13.0. Not part of CI: torch 2.4 comes from PyPI as a CUDA build
# (about 3 GB with its NVIDIA libraries), which takes minutes to fetch.
#
#   bash scripts/check_floor_versions.sh [VENV_DIR]     from anywhere; VENV_DIR defaults to
#                                                       .venv-floor in the repository root
#   PYTHON=python3.10 picks the interpreter (default: python3.10 on PATH).
set -euo pipefail
VENV=$(realpath -m "${1:-$(dirname "$0")/../.venv-floor}")  # relative to where it was called from
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.10}
FLOOR=("torch==2.4.1" "numpy==1.24.4" "typer==0.16.0" "rich==13.0.0")

"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "${FLOOR[@]}" pytest hypothesis "matplotlib>=3.7"
# The project itself without resolving its dependencies again, so the floors stay installed.
"$VENV/bin/python" -m pip install -q --no-deps -e .
"$VENV/bin/python" -m pip list 2>/dev/null | grep -iE '^(torch|numpy|typer|rich|click) '
"$VENV/bin/python" -m pytest -q -m "not slow" -p no:cacheprovider
