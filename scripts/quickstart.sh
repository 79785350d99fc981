#!/usr/bin/env bash
# Fresh machine to a working tour: install kxtx, start a sandbox broker, run the commands, stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -m pip install -q --disable-pip-version-check -e '.[spark]'
export KXTX_SANDBOX_DIR="${KXTX_SANDBOX_DIR:-$(mktemp -d)/sandbox}"
say() { printf '\n\033[1m$ %s\033[0m\n' "$*" >&2; }
kx() { say "kxtx $*"; "$PY" -m kxtx "$@"; }

trap '"$PY" -m kxtx sandbox stop >/dev/null 2>&1 || true' EXIT
BOOTSTRAP=$("$PY" -m kxtx sandbox start --port 0 -o json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["bootstrap"])')
export KXTX_BOOTSTRAP_SERVERS="$BOOTSTRAP"
say "sandbox broker at $BOOTSTRAP"
kx cluster
kx sandbox status
echo "quickstart: done" >&2
