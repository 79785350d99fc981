#!/usr/bin/env bash
# The test command (README, CI): install what the tests need, then run them against real brokers.
#   1. the whole suite against the newest Kafka 4.x;
#   2. the tests marked `versioned` (behaviour differs by version) again against Kafka 3.9.
# Both stages always run, at the same time (below); stage 2's output follows stage 1's; a summary
# of both closes the output; the exit code is non-zero when either failed. Extra arguments go to
# pytest in both stages (e.g. `bash scripts/test.sh -k produce`).
#
# Both stages run in parallel with pytest-xdist: KXTX_TEST_WORKERS workers (default 4; 0 = serial,
# in this process). The tests wait on brokers, JVMs and timeouts as much as they compute, so on the
# 2-core machine CI runs on 4 workers finish sooner than 3 (bench/README.md, "The test suite's
# workers"). Each worker starts its own session broker; tests sharing an expensive fixture stay in
# one worker (tests/conftest.py).
#
# Dependencies are installed with `--upgrade --upgrade-strategy eager`: the tests run on the versions
# pip resolves today, as a new user gets them, not on whatever an old virtualenv kept (a new orjson
# release once broke a fresh install while every existing venv stayed green). Run it in a virtualenv.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WORKERS=${KXTX_TEST_WORKERS:-4}

"$PY" -m pip install -q --disable-pip-version-check --upgrade --upgrade-strategy eager -e '.[spark,registry,test]' \
  || { echo "test.sh: installing kxtx and its test dependencies failed" >&2; exit 1; }
# kxtx's modules compiled once, as an installed kxtx has them: where PYTHONDONTWRITEBYTECODE is set
# (it is on CI's machine), an editable install's modules are compiled again at every start of the
# `kxtx` the tests run well over a thousand times (bench/README.md, "Start-up").
"$PY" -m compileall -q kxtx >/dev/null || { echo "test.sh: compiling kxtx's modules failed" >&2; exit 1; }
echo "test.sh: dependency versions under test:" >&2
"$PY" -m pip freeze --exclude-editable 2>/dev/null \
  | grep -iE '^(typer|click|rich|confluent-kafka|kafka-python|cryptography|orjson|msgspec|pyspark|pandas|pyarrow|py4j|fastavro|jsonschema|protobuf|httpx2|pytest|pytest-timeout|pytest-xdist|psutil)==' \
  | sed 's/^/  /' >&2

# How busy the machine's CPUs were during a stage (from /proc/stat; Linux only): near 100 % the
# stage is bound by CPU and more workers cannot help; well below, its tests mostly wait.
cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat 2>/dev/null; }
busy() { # busy-before total-before busy-after total-after
  if [ -n "${4:-}" ] && [ "$4" -gt "$2" ]; then echo ", CPUs $(( 100 * ($3 - $1) / ($4 - $2) ))% busy ($(nproc) cores)"; fi
}

# The schema registry the tests start (tests/registry.py), built once into kxtx's cache dir: a Go
# problem fails here, not inside a fixture.
"$PY" tests/registry.py >/dev/null || { echo "test.sh: building the schema registry failed" >&2; exit 1; }
# The Flink job test_complete_flink.py runs (tests/flink.py): Flink's jars from Maven Central and the
# job compiled, once, into kxtx's cache dir; here, because both stages run the test and must not run
# Maven into the same repository at once.
"$PY" tests/flink.py >/dev/null || { echo "test.sh: building the Flink job failed" >&2; exit 1; }

# Both Kafka versions before any test: the stages run at once and must not fetch jars into the
# same Maven repository concurrently; a Maven problem fails here, not inside a fixture.
"$PY" - <<'PY' || { echo "test.sh: fetching the Kafka jars failed" >&2; exit 1; }
import sys
from kxtx.sandbox import resolve_distribution
for spec in ("4", "3.9"):
    d = resolve_distribution(spec, progress=lambda line: print(f"test.sh: {line}", file=sys.stderr))
    print(f"test.sh: Kafka {d.version} jars in {d.libs}", file=sys.stderr)
PY

# Stage 2 runs beside stage 1, at a lower CPU priority (nice 10), instead of after it. Stage 1
# keeps the CPUs 80-85 % busy (its tests wait on brokers and JVMs as much as they compute), and
# stage 2's tests are small: run after stage 1, they added 70-90 s to CI; beside it, they use the
# CPU stage 1 leaves idle and end long before it (190-220 s). Stage 2's output waits in a file and
# is printed after stage 1's.
#
# Stage 2 starts KXTX_TEST_STAGE2_DELAY seconds (default 150) after stage 1: stage 1's first minutes
# start its two 3-node clusters and its workers' session brokers, and a JVM at nice 10 gets little
# CPU beside them. Started at once, stage 2's three session brokers each waited out the sandbox's
# 120 s storage-format timeout (CI, and 3 formats at nice 10 beside 6 busy loops took 47 s where
# one alone takes 3), and every test of theirs failed at setup.
# The unit tests first, on their own, without PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE, which
# CI's machine sets and a user's shell does not: inherited, the `kxtx` processes the tests start
# wrote at once what a user's process keeps in a buffer, and the suite passed while a finished
# command lost what its exit handlers wrote. The stages below then leave tests/unit out, so each
# test runs once. Only for a whole run: given arguments (a file, -k), everything runs as asked.
unit_rc=0
unit_s=0
only=()
if [ "$#" -eq 0 ]; then
  s=$SECONDS
  env -u PYTHONUNBUFFERED -u PYTHONDONTWRITEBYTECODE "$PY" -m pytest -q -n "$WORKERS" tests/unit || unit_rc=$?
  unit_s=$(( SECONDS - s ))
  only=(--ignore=tests/unit)
fi

STAGE2_DELAY=${KXTX_TEST_STAGE2_DELAY:-150}
stage2_out=$(mktemp "${TMPDIR:-/tmp}/kxtx-stage2.XXXXXX")
trap 'rm -f "$stage2_out" "$stage2_out.s" "$stage2_out.3"' EXIT
read -r b0 t0 <<<"$(cpu_ticks)"
s0=$SECONDS
# Stage 2 stays in this script's process group, so Ctrl-C (the terminal signals the whole group)
# stops it as it stops stage 1. Bash makes a background job ignore SIGINT, but in a `( ... ) &`
# subshell only the subshell itself: the commands it runs get SIGINT back
# (tests/unit/test_test_script.py checks it).
(
  sleep "$STAGE2_DELAY"
  s=$SECONDS
  KXTX_TEST_KAFKA_VERSION=3.9 nice -n 10 "$PY" -m pytest -q -n "$WORKERS" -m versioned "${only[@]}" "$@"
  rc=$?
  echo "$(( SECONDS - s ))" >"$stage2_out.s"
  # Stage 3, in stage 2's slack: the tests that hold a fast path against the general one, again
  # with every fast path off (KXTX_FAST=0, kxtx.fast): the general code alone gives what they expect.
  # (Not after an interrupt: pytest's exit 2 is Ctrl-C, which this subshell itself ignores.)
  if [ "$rc" -eq 2 ]; then echo "2 0" >"$stage2_out.3"; exit "$rc"; fi
  s=$SECONDS
  KXTX_FAST=0 nice -n 10 "$PY" -m pytest -q -n "$WORKERS" -m fastpath "$@"
  echo "$? $(( SECONDS - s ))" >"$stage2_out.3"
  exit "$rc"
) >"$stage2_out" 2>&1 &
stage2_pid=$!
"$PY" -m pytest -q -n "$WORKERS" "${only[@]}" "$@"
rc1=$?
stage1="$(( SECONDS - s0 )) s"
wait "$stage2_pid"
rc2=$?
stage2="$(cat "$stage2_out.s" 2>/dev/null || echo '?') s"
read -r rc3 stage3_s <"$stage2_out.3" 2>/dev/null || { rc3=1; stage3_s='?'; }
if [ "$rc3" -eq 5 ]; then rc3=0; fi  # 5 = no fastpath test selected by the given arguments
read -r b1 t1 <<<"$(cpu_ticks)"
echo "test.sh: stage 2 (versioned tests on Kafka 3.9) and stage 3 (fastpath tests, KXTX_FAST=0), run beside stage 1:"
cat "$stage2_out"
if [ "$rc2" -eq 5 ]; then rc2=0; fi  # 5 = no versioned test selected by the given arguments
both="$(( SECONDS - s0 )) s$(busy "$b0" "$t0" "$b1" "$t1")"

verdict() { if [ "$1" -eq 0 ]; then echo "passed"; else echo "FAILED (pytest exit $1)"; fi; }
if [ "$#" -eq 0 ]; then
  echo "test.sh: unit tests, without PYTHONUNBUFFERED/PYTHONDONTWRITEBYTECODE: $(verdict "$unit_rc") (${unit_s} s)" >&2
fi
echo "test.sh: stage 1, whole suite on Kafka 4.x: $(verdict "$rc1") ($stage1)" >&2
echo "test.sh: stage 2, versioned tests on Kafka 3.9: $(verdict "$rc2") ($stage2, at nice 10)" >&2
echo "test.sh: stage 3, fastpath tests with every fast path off (KXTX_FAST=0): $(verdict "$rc3") ($stage3_s s, at nice 10)" >&2
echo "test.sh: both stages: $both" >&2
[ "$unit_rc" -eq 0 ] && [ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && [ "$rc3" -eq 0 ]
