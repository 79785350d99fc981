"""`kxtx pipe` checks the cluster and its topics before Spark starts.

JAVA_HOME points nowhere in these runs: a pipe that started Spark first would fail with Spark's
error instead of the one asserted (no timing needed to prove the order)."""

from __future__ import annotations

import socket
import uuid

import pytest

from tests.integration.pipe_helpers import UDFS, committed_offsets

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

NO_JAVA = {"JAVA_HOME": "/nonexistent-kxtx-test-java", "PATH": "/usr/bin:/bin"}


def no_java_env():
    import os
    import sys

    # The interpreter's own directory stays on PATH (for the python workers); java does not.
    path = os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"])
    return {**NO_JAVA, "PATH": path}


def run_pipe(run_kxtx, *args, **kw):
    return run_kxtx("pipe", "--mode", "driver", "--udf", f"{UDFS}:identity", "--until-idle", "2", *args,
                    env=no_java_env(), timeout=120, **kw)


def test_spark_really_cannot_start_in_these_runs(kafka, run_kxtx):
    """The premise: with this environment, a pipe that gets as far as Spark fails there."""
    src, out = kafka.create_topic(), kafka.create_topic()
    r = run_pipe(run_kxtx, "--in", src, "--out", out, "--group", f"g-{uuid.uuid4().hex[:8]}")
    assert r.returncode == 1, r.stderr
    assert "could not start Spark" in r.stderr


def test_missing_input_topic_is_a_usage_error_before_spark(kafka, run_kxtx):
    out = kafka.create_topic()
    missing = f"missing-in-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    r = run_pipe(run_kxtx, "--in", missing, "--out", out, "--group", group)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"kxtx: error: input topic {missing!r} does not exist (create it first)"
    assert committed_offsets(kafka.bootstrap, group, out, 1) == [-1001]


def test_one_missing_input_among_several(kafka, run_kxtx):
    src, out = kafka.create_topic(), kafka.create_topic()
    missing = f"missing-in-{uuid.uuid4().hex[:8]}"
    r = run_pipe(run_kxtx, "--in", f"{src},{missing}", "--out", out, "--group", "g")
    assert r.returncode == 2, r.stderr
    assert f"input topic {missing!r} does not exist" in r.stderr


def test_missing_output_topic_before_spark(kafka, topic, run_kxtx):
    missing = f"missing-out-{uuid.uuid4().hex[:8]}"
    r = run_pipe(run_kxtx, "--in", topic, "--out", missing, "--group", "g")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"kxtx: error: output topic {missing!r} does not exist (create it first)"


def test_unreachable_cluster_names_the_address_before_spark(run_kxtx):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    r = run_pipe(run_kxtx, "--in", "a", "--out", "b", "--group", "g", "-b", address,
                 bootstrap=False)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"kxtx: error: connecting to {address}: no broker reachable"), r.stderr
    assert "could not start Spark" not in r.stderr


def test_unresolvable_host_names_the_address_before_spark(run_kxtx):
    address = "kxtx-no-such-host.invalid:9092"
    r = run_pipe(run_kxtx, "--in", "a", "--out", "b", "--group", "g", "-b", address,
                 bootstrap=False)
    assert r.returncode == 1, r.stderr
    assert f"connecting to {address}: no broker reachable" in r.stderr
    assert "could not start Spark" not in r.stderr
