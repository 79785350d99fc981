"""Helpers for the `kxtx produce` integration tests: input files and the run's summary (reading
the output: `kafka_io`)."""

from __future__ import annotations

import json


def write_jsonl(path, n: int, start: int = 0) -> list[bytes]:
    lines = [
        json.dumps({"id": i, "c": {"k": f"k{i % 5}"}, "pad": "x" * 40}, separators=(",", ":")).encode()
        for i in range(start, start + n)
    ]
    with open(path, "ab") as f:
        f.write(b"\n".join(lines) + b"\n")
    return lines


def summary(proc) -> dict:
    """The jsonl summary a run prints on stdout (stdout is not a TTY in tests)."""
    assert proc.stdout.strip(), f"no summary; exit {proc.returncode}; stderr: {proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])
