#!/usr/bin/env bash
# The test command (README, CI): install what the tests need, then run them against real brokers.
#   1. the whole suite against the newest Kafka 4.x;
#   2. the tests marked `versioned` (behaviour differs by version) again against Kafka 3.9.
# Both stages always run; a summary of both closes the output; the exit code is non-zero when
# either failed. Extra arguments go to pytest (e.g. `bash scripts/test.sh -k produce`).
#
# Both stages run in parallel with pytest-xdist: KXTX_TEST_WORKERS workers (default 3; 0 = serial,
# in this process). The tests wait on brokers, JVMs and timeouts as much as they compute: on the
# 2-core machine CI runs on, the whole suite took 22m50s on 3 workers (CPUs 91 % busy) against 29m45s
# on 2 an hour earlier. Each worker starts its own session broker; tests sharing an expensive fixture
# stay in one worker (tests/conftest.py).
#
# Dependencies are installed with `--upgrade --upgrade-strategy eager`: the tests run on the versions
# pip resolves today, as a new user gets them, not on whatever an old virtualenv kept (a new orjson
# release once broke a fresh install while every existing venv stayed green). Run it in a virtualenv.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WORKERS=${KXTX_TEST_WORKERS:-3}

"$PY" -m pip install -q --disable-pip-version-check --upgrade --upgrade-strategy eager -e '.[spark,test]' \
  || { echo "test.sh: installing kxtx and its test dependencies failed" >&2; exit 1; }
echo "test.sh: dependency versions under test:" >&2
"$PY" -m pip freeze --exclude-editable 2>/dev/null \
  | grep -iE '^(typer|click|rich|confluent-kafka|kafka-python|cryptography|orjson|msgspec|pyspark|pandas|pyarrow|py4j|pytest|pytest-timeout|pytest-xdist|psutil)==' \
  | sed 's/^/  /' >&2

# How busy the machine's CPUs were during a stage (from /proc/stat; Linux only): near 100 % the
# stage is bound by CPU and more workers cannot help; well below, its tests mostly wait.
cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat 2>/dev/null; }
busy() { # busy-before total-before busy-after total-after
  if [ -n "${4:-}" ] && [ "$4" -gt "$2" ]; then echo ", CPUs $(( 100 * ($3 - $1) / ($4 - $2) ))% busy ($(nproc) cores)"; fi
}

read -r b0 t0 <<<"$(cpu_ticks)"
s0=$SECONDS
"$PY" -m pytest -q -n "$WORKERS" "$@"
rc1=$?
read -r b1 t1 <<<"$(cpu_ticks)"
stage1="$(( SECONDS - s0 )) s$(busy "$b0" "$t0" "$b1" "$t1")"

s0=$SECONDS
KXTX_TEST_KAFKA_VERSION=3.9 "$PY" -m pytest -q -n "$WORKERS" -m versioned "$@"
rc2=$?
read -r b2 t2 <<<"$(cpu_ticks)"
stage2="$(( SECONDS - s0 )) s$(busy "$b1" "$t1" "$b2" "$t2")"
if [ "$rc2" -eq 5 ]; then rc2=0; fi  # 5 = no versioned test selected by the given arguments

verdict() { if [ "$1" -eq 0 ]; then echo "passed"; else echo "FAILED (pytest exit $1)"; fi; }
echo "test.sh: stage 1, whole suite on Kafka 4.x: $(verdict "$rc1") ($stage1)" >&2
echo "test.sh: stage 2, versioned tests on Kafka 3.9: $(verdict "$rc2") ($stage2)" >&2
[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ]
