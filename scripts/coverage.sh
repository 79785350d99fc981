#!/usr/bin/env bash
# Line coverage of kxtx/ over the suite, for comparing two commits (issue 27: a change to the tests
# must not lower it). Code that runs in the processes the tests start is counted too: the `kxtx` CLI
# (subprocess), xdist workers, and Spark's local Python workers (started by the JVM, they inherit
# COVERAGE_PROCESS_START and the .pth file coverage writes for `patch = subprocess`). Code shipped by
# value to a standalone cluster's executors is not (it runs from a copy).
#   bash scripts/coverage.sh [pytest args]     the total is the last line; `coverage report -m` or
#                                              `coverage html` afterwards show the lines
# Run it in a virtualenv (it installs coverage). It takes longer than the plain suite.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -m pip install -q --disable-pip-version-check 'coverage>=7.10' \
  || { echo "coverage.sh: installing coverage failed" >&2; exit 1; }
# one absolute data file for every process, whatever its working directory
export COVERAGE_FILE="$PWD/.coverage"
rm -f .coverage .coverage.*
"$PY" -m coverage run -m pytest -q -n "${KXTX_TEST_WORKERS:-2}" -p no:cacheprovider "$@"
rc=$?
"$PY" -m coverage combine -q
"$PY" -m coverage report --precision=1 | tail -1
echo "coverage.sh: pytest exit $rc" >&2
exit "$rc"
