#!/usr/bin/env bash
# Fresh machine to a working tour: install kxtx, start a sandbox broker, run the commands, stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
say() { printf '\n\033[1m$ %s\033[0m\n' "$*" >&2; }
# Not quiet: a first install downloads ~500 MB (pyspark is most of it) for minutes; pip's own lines
# say what it fetches and how big it is, with a progress bar on a terminal. Run it in a virtualenv.
# KXTX_QUICKSTART_NO_INSTALL=1 skips it where kxtx is installed already (the test suite runs this).
if [ "${KXTX_QUICKSTART_NO_INSTALL:-}" != 1 ]; then
  say "pip install -e '.[spark]'   # kxtx and its dependencies; the first time ~500 MB, mostly pyspark"
  "$PY" -m pip install --disable-pip-version-check -e '.[spark]' >&2
fi
work=$(mktemp -d)
export KXTX_SANDBOX_DIR="${KXTX_SANDBOX_DIR:-$work/sandbox}"
kx() { say "kxtx $*"; "$PY" -m kxtx "$@"; }

trap '"$PY" -m kxtx sandbox stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
# The first run fetches the Kafka jars with Maven (~100 MB): kxtx prints each jar as it arrives.
say "kxtx sandbox start --port 0"
BOOTSTRAP=$("$PY" -m kxtx sandbox start --port 0 -o json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["bootstrap"])')
export KXTX_BOOTSTRAP_SERVERS="$BOOTSTRAP"
say "sandbox broker at $BOOTSTRAP"
kx cluster

kx topic create orders -p 2 -o table
kx topic create orders-enriched -p 2 -o table

# 10,000 JSON orders.
"$PY" - "$work/orders.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as out:
    for i in range(10_000):
        status = "cancelled" if i % 10 == 0 else "paid"
        out.write(json.dumps({"order": {"id": i}, "amount": i / 100, "status": status}) + "\n")
PY

kx produce "$work/orders.jsonl" -t orders -k order.id --transactional-id quickstart-orders -o table
kx produce "$work/orders.jsonl" -t orders -k order.id --transactional-id quickstart-orders -o table  # nothing to do
PYTHONPATH="$PWD/examples${PYTHONPATH:+:$PYTHONPATH}" \
  kx pipe --in orders --out orders-enriched --group quickstart --udf enrich:enrich --value-format json --until-idle 5 -o table
kx inspect txn quickstart-orders -o table
kx dump txn-state --transactional-id quickstart-orders -o table
kx dump offsets --group quickstart --latest -o table
kx find-hanging --topic orders -o table
say "the sandbox is stopped and removed on exit"
echo "quickstart: done" >&2
