#!/usr/bin/env bash
# The style and type gate (CI runs it before the tests; run it before you commit):
#   ruff format --check, ruff check, mypy (settings in pyproject.toml).
# `bash scripts/lint.sh --fix` formats and applies ruff's safe fixes first.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ "${1:-}" = "--fix" ]; then
  "$PY" -m ruff format . && "$PY" -m ruff check --fix .
fi
rc=0
"$PY" -m ruff format --check . || { echo "lint.sh: ruff format would change the files above (bash scripts/lint.sh --fix)" >&2; rc=1; }
"$PY" -m ruff check . || { echo "lint.sh: ruff check failed" >&2; rc=1; }
"$PY" -m mypy || { echo "lint.sh: mypy failed" >&2; rc=1; }
[ "$rc" -eq 0 ] && echo "lint.sh: ruff format, ruff check and mypy passed" >&2
exit "$rc"
