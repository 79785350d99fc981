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


@pytest.fixture(params=["driver", "executors"])
def mode(request):
    """Both modes run the same checks (kxtx.pipe.preflight) before Spark starts."""
    return request.param


@pytest.fixture
def run_pipe(run_kxtx, mode):
    def run(*args, **kw):
        return run_kxtx(
            "pipe",
            "--mode",
            mode,
            "--udf",
            f"{UDFS}:identity",
            "--until-idle",
            "2",
            *args,
            env=no_java_env(),
            timeout=120,
            **kw,
        )

    return run


def test_spark_really_cannot_start_in_these_runs(kafka, run_pipe):
    """The premise: with this environment, a pipe that gets as far as Spark fails there."""
    src, out = kafka.create_topic(), kafka.create_topic()
    r = run_pipe("--in", src, "--out", out, "--group", f"g-{uuid.uuid4().hex[:8]}", expect=1)
    assert "could not start Spark" in r.stderr


def test_missing_input_topic_is_a_usage_error_before_spark(kafka, run_pipe):
    out = kafka.create_topic()
    missing = f"missing-in-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    r = run_pipe("--in", missing, "--out", out, "--group", group, expect=2)
    assert (
        r.stderr.strip()
        == f"kxtx: error: topic {missing!r} does not exist: create it first (kxtx topic create {missing})"
    )
    assert committed_offsets(kafka.bootstrap, group, out, 1) == [-1001]


def test_one_missing_input_among_several(kafka, run_pipe):
    src, out = kafka.create_topic(), kafka.create_topic()
    missing = f"missing-in-{uuid.uuid4().hex[:8]}"
    r = run_pipe("--in", f"{src},{missing}", "--out", out, "--group", "g", expect=2)
    assert f"topic {missing!r} does not exist" in r.stderr


def test_missing_output_topic_before_spark(kafka, topic, run_pipe):
    missing = f"missing-out-{uuid.uuid4().hex[:8]}"
    r = run_pipe("--in", topic, "--out", missing, "--group", "g", expect=2)
    assert (
        r.stderr.strip()
        == f"kxtx: error: topic {missing!r} does not exist: create it first (kxtx topic create {missing})"
    )


def test_unreachable_cluster_names_the_address_before_spark(run_pipe):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    r = run_pipe("--in", "a", "--out", "b", "--group", "g", "-b", address, bootstrap=False, expect=69)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"kxtx: error: connecting to {address}: no broker reachable"), r.stderr
    assert "could not start Spark" not in r.stderr


def test_unresolvable_host_names_the_address_before_spark(run_pipe):
    address = "kxtx-no-such-host.invalid:9092"
    r = run_pipe("--in", "a", "--out", "b", "--group", "g", "-b", address, bootstrap=False, expect=69)
    assert f"connecting to {address}: no broker reachable" in r.stderr
    assert "could not start Spark" not in r.stderr


def test_a_pattern_matching_nothing_yet_warns_before_spark(kafka, run_pipe):
    out = kafka.create_topic()
    pattern = f"^nothing-{uuid.uuid4().hex[:8]}-"
    r = run_pipe("--in", pattern, "--out", out, "--group", f"g-{uuid.uuid4().hex[:8]}", expect=1)
    assert f"no topic matches --in {pattern} yet" in r.stderr
    assert "could not start Spark" in r.stderr  # it went on to Spark


def test_a_pattern_taking_the_output_is_a_usage_error(kafka, run_pipe):
    out = kafka.create_topic()
    r = run_pipe("--in", "^.*", "--out", out, "--group", "g", expect=2)
    assert r.stderr.strip() == (
        "kxtx: error: --out cannot be one of the --in topics (the pipe "
        f"would feed itself; --in ^.* takes {out!r})"
    )
