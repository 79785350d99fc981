#!/usr/bin/env bash
# The test command (README, CI): install what the tests need, then run them against real brokers.
#   1. the whole suite against the newest Kafka 4.x;
#   2. the tests marked `versioned` (behaviour differs by version) again against Kafka 3.9.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k produce`).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

"$PY" -m pip install -q --disable-pip-version-check -e '.[spark,test]'

"$PY" -m pytest -q "$@"

set +e
KXTX_TEST_KAFKA_VERSION=3.9 "$PY" -m pytest -q -m versioned "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then rc=0; fi  # 5 = no versioned test selected by the given arguments
exit "$rc"
