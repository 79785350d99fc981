"""`-o json` prints exactly one JSON document, whatever the outcome, for every command and subcommand
(issue 24 item 2): each row below runs one in one situation (success, an error after part of the
work, 3, an unreachable cluster, 75, a stop by SIGINT / SIGTERM / SIGHUP) and parses its whole stdout
with `json.loads`: one object, with the exit code's status. The rows are checked against the app's
command list, so a new command without a row fails here.

One broker (verification off, for the hanging transactions abort-hanging and abort need; shared
with test_hanging.py in a worker) and small inputs. The rows run side by side (each on topics of its
own where it writes), started together by the `outcomes` fixture. Not here: exit 75, which needs a
cluster short of brokers (one broker meets any min.insync.replicas: Kafka 4 caps it at the
replication factor): produce's is checked in test_multibroker_produce.py
(test_too_few_in_sync_replicas_exit_75_and_the_rerun_continues)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from kxtx.cli import docs
from kxtx.exitcodes import ExitCode, status
from tests import cli
from tests.conftest import Kafka
from tests.integration.kafka_io import commit_offset, end_offsets, wait_until
from tests.integration.pipe_helpers import UDFS
from tests.integration.txn_helpers import hanging_broker, kxtx_on, make_hanging

pytestmark = [pytest.mark.kafka]

NOWHERE = ["-b", "127.0.0.1:1"]  # a port that refuses at once: exit 69
STATUS_KEYS = {"status", "exit_code", "error"}


@pytest.fixture(scope="module")
def broker(brokers):
    return hanging_broker(brokers)


@dataclass
class Scene:
    """What the rows run on: a topic with a committed transaction, two hanging transactions (one
    to find, one to abort), a topic no write can reach, input files."""

    kafka: Kafka
    data: str
    txid: str
    hang: str
    hang2: str
    hang2_start: int
    dir: Path
    good: Path
    bad: Path

    topics: dict[str, str]
    lock: threading.Lock

    @property
    def port(self) -> str:
        return self.kafka.bootstrap.split(",")[0].rsplit(":", 1)[1]

    def topic(self, name: str) -> str:
        """A topic of its own for `name` (a row that writes, or counts what it wrote)."""
        with self.lock:
            if name not in self.topics:
                slug = name.lower().replace(" ", "-")
                self.topics[name] = self.kafka.create_topic(f"doc-{slug}-{uuid.uuid4().hex[:6]}")
            return self.topics[name]


@pytest.fixture(scope="module")
def scene(broker, tmp_path_factory) -> Iterator[Scene]:
    from confluent_kafka import Producer

    u = uuid.uuid4().hex[:6]
    data = broker.create_topic(f"doc-data-{u}")
    txid = f"doc-tx-{u}"
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txid})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(3):
        p.produce(data, f"v{i}".encode())
    p.commit_transaction(60)
    commit_offset(broker.bootstrap, f"doc-group-{u}", data, 0, 1)  # __consumer_offsets has a record
    hang = broker.create_topic(f"doc-hang-{u}")
    hang2 = broker.create_topic(f"doc-hang2-{u}")
    make_hanging(broker.bootstrap, f"doc-h1-{u}", [(hang, 0)])
    _p, starts = make_hanging(broker.bootstrap, f"doc-h2-{u}", [(hang2, 0)])
    d = tmp_path_factory.mktemp("json-docs")
    good, bad = d / "good.jsonl", d / "bad.jsonl"
    good.write_text("".join(f'{{"k":"k{i}","i":{i}}}\n' for i in range(20)))
    bad.write_text("".join("{oops\n" if i == 7 else f'{{"k":"k{i}","i":{i}}}\n' for i in range(10)))
    yield Scene(broker, data, txid, hang, hang2, starts[(hang2, 0)], d, good, bad, {}, threading.Lock())
    # The worker's broker with verification off is shared with test_hanging.py, whose find-hanging
    # runs over every topic: leave nothing hanging behind (it failed after this module before).
    for topic in (hang, hang2):
        kxtx_on(broker, "abort-hanging", "--topic", topic, "--yes", expect=0)


# --- the rows -----------------------------------------------------------------------------------------
@dataclass
class Case:
    command: str  # as typed: "dump txn-state"
    situation: str
    argv: Callable[[Scene], list[str]]  # after the command's name; -o json is added
    code: int
    check: Callable[[dict, Scene], object] = lambda doc, s: True
    #: a stop: this signal, once `ready(proc, scene)` is true
    stop: signal.Signals | None = None
    ready: Callable[[subprocess.Popen, Scene], bool] | None = None
    #: a stop of produce: stdin fed with lines until it ends
    feed: bool = False


def connected(proc: subprocess.Popen, s: Scene) -> bool:
    """The command talks to the broker: it has started (a stop before that, while Python loads kxtx,
    has no command to write a document; see docs/output.md)."""
    try:
        conns = psutil.Process(proc.pid).net_connections(kind="tcp")
    except psutil.Error:
        return False
    return any(c.raddr and str(c.raddr.port) == s.port and c.status == "ESTABLISHED" for c in conns)


def committed(topic: Callable[[Scene], str]) -> Callable[[subprocess.Popen, Scene], bool]:
    """Records of the run are committed in the topic: it has done part of its work."""

    def ready(proc: subprocess.Popen, s: Scene) -> bool:
        return sum(end_offsets(s.kafka.bootstrap, topic(s)).values()) > 0

    return ready


def spark_launched(proc: subprocess.Popen, s: Scene) -> bool:
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
        # spark-submit's launcher JVM (org.apache.spark.launcher.Main) lives a fraction of a second
        # on a quiet machine, less than a poll: the JVM it starts (SparkSubmit) counts too.
        return any("org.apache.spark." in " ".join(k.cmdline()) for k in kids)
    except psutil.Error:
        return False


def _produce_stop(sig: signal.Signals) -> Case:
    return Case(
        "produce",
        sig.name,
        lambda s: ["-", "-t", s.topic(sig.name), "-I", "jsonl", "-k", "k", "-n", "500"],
        128 + sig,
        lambda doc, s: doc["records"] > 0,
        stop=sig,
        ready=committed(lambda s: s.topic(sig.name)),
        feed=True,
    )


def _dump_stop(command: str, sig: signal.Signals) -> Case:
    return Case(
        command,
        sig.name,
        lambda s: ["--follow"],
        128 + sig,
        lambda doc, s: isinstance(doc["records"], list),
        stop=sig,
        ready=connected,
    )


def _unreachable(command: str, argv: Callable[[Scene], list[str]] = lambda s: []) -> Case:
    return Case(
        command,
        "unreachable",
        lambda s: [*argv(s), *NOWHERE],
        ExitCode.UNREACHABLE,
        lambda doc, s: "127.0.0.1:1" in doc["error"] and not doc.get("records"),
    )


def _sandbox(command: str, code: int, check, *args: str) -> Case:
    return Case(
        f"sandbox {command}",
        "no sandbox",
        lambda s: [*args, "--state-dir", str(s.dir / "no-sandbox")],
        code,
        check,
    )


def _no_node(command: str) -> Case:
    return _sandbox(command, ExitCode.ERROR, lambda doc, s: "no sandbox" in doc["error"], "1")


CASES = [
    # produce
    Case(
        "produce",
        "ok",
        lambda s: [str(s.good), "-t", s.topic("produce ok"), "-k", "k"],
        0,
        lambda doc, s: doc["records"] == 20,
    ),
    Case(
        "produce",
        "bad line after two transactions",
        lambda s: [str(s.bad), "-t", s.topic("produce bad"), "-k", "k", "-n", "3"],
        ExitCode.ERROR,
        lambda doc, s: (doc["records"], doc["transactions"]) == (6, 2) and "bad.jsonl:8" in doc["error"],
    ),
    _unreachable("produce", lambda s: [str(s.good), "-t", s.data]),
    _produce_stop(signal.SIGINT),
    _produce_stop(signal.SIGTERM),
    _produce_stop(signal.SIGHUP),
    # pipe: before Spark starts, and stopped while it starts (the summary so far)
    _unreachable("pipe", lambda s: ["--in", s.data, "--out", "out", "--udf", f"{UDFS}:identity", "-g", "g"]),
    pytest.param(
        Case(
            "pipe",
            "SIGTERM",
            lambda s: ["--in", s.data, "--out", s.topic("pipe-out"), "--udf", f"{UDFS}:identity", "-g", "g"],
            ExitCode.TERMINATED,
            lambda doc, s: doc["stopped"] == "SIGTERM" and doc["input"] == s.data,
            stop=signal.SIGTERM,
            ready=spark_launched,
        ),
        marks=pytest.mark.spark,
    ),
    # dump
    Case(
        "dump txn-state",
        "ok",
        lambda s: ["-t", s.txid],
        0,
        lambda doc, s: s.txid in json.dumps(doc["records"]),
    ),
    _unreachable("dump txn-state"),
    _dump_stop("dump txn-state", signal.SIGINT),
    _dump_stop("dump txn-state", signal.SIGTERM),
    Case(
        "dump offsets", "ok", lambda s: ["--latest"], 0, lambda doc, s: s.data in json.dumps(doc["records"])
    ),
    _unreachable("dump offsets"),
    _dump_stop("dump offsets", signal.SIGTERM),
    Case(
        "dump partition",
        "ok",
        lambda s: [f"{s.data}:0"],
        0,
        lambda doc, s: doc["batches"] and doc["summary"][0]["records"] >= 3,
    ),
    Case(
        "dump partition",
        "records",
        lambda s: [f"{s.data}:0", "--records"],
        0,
        lambda doc, s: sum(len(b.get("records", [])) for b in doc["batches"]) == doc["summary"][0]["records"],
    ),
    Case("dump partition", "no such partition", lambda s: [f"{s.data}:99"], ExitCode.USAGE),
    _unreachable("dump partition", lambda s: ["t:0"]),
    # inspect
    Case("inspect txn", "ok", lambda s: [s.txid], 0, lambda doc, s: doc["transactional_id"] == s.txid),
    Case("inspect txn", "unknown id", lambda s: [f"nope-{uuid.uuid4()}"], ExitCode.ERROR),
    _unreachable("inspect txn", lambda s: ["x"]),
    Case("inspect partition", "ok", lambda s: [f"{s.data}:0"], 0, lambda doc, s: doc["lso"] >= 3),
    _unreachable("inspect partition", lambda s: ["t:0"]),
    Case(
        "inspect group",
        "ok",
        lambda s: [f"doc-group-{s.txid.rsplit('-', 1)[1]}"],
        0,
        lambda doc, s: [(p["topic"], p["committed"]) for p in doc["partitions"]] == [(s.data, 1)],
    ),
    Case("inspect group", "unknown group", lambda s: [f"nope-{uuid.uuid4()}"], ExitCode.ERROR),
    _unreachable("inspect group", lambda s: ["g"]),
    # hanging transactions
    Case(
        "find-hanging", "nothing hangs", lambda s: ["--topic", s.data], 0, lambda doc, s: doc["hanging"] == []
    ),
    Case(
        "find-hanging",
        "one hangs",
        lambda s: ["--topic", s.hang],
        ExitCode.PROBLEM_FOUND,
        lambda doc, s: [(h["topic"], h["partition"]) for h in doc["hanging"]] == [(s.hang, 0)],
    ),
    _unreachable("find-hanging"),
    Case(
        "abort-hanging",
        "nothing to abort",
        lambda s: ["--topic", s.data, "--yes"],
        0,
        lambda doc, s: doc["transactions"] == [],
    ),
    Case(
        "abort-hanging",
        "dry run",
        lambda s: ["--topic", s.hang, "--dry-run"],
        ExitCode.PROBLEM_FOUND,
        lambda doc, s: [t["kind"] for t in doc["transactions"]] == ["plan"],
    ),
    _unreachable("abort-hanging", lambda s: ["--yes"]),
    Case(
        "abort",
        "ok",
        lambda s: ["--topic", s.hang2, "--partition", "0", "--start-offset", str(s.hang2_start), "--yes"],
        0,
        lambda doc, s: [(t["kind"], t["outcome"]) for t in doc["transactions"]] == [("result", "aborted")],
    ),
    Case(
        "abort",
        "no such transaction",
        lambda s: ["--topic", s.topic("abort none"), "--partition", "0", "--start-offset", "7", "--yes"],
        ExitCode.ERROR,
        lambda doc, s: "no open transaction starts at offset 7" in doc["error"],
    ),
    _unreachable("abort", lambda s: ["--topic", "t", "--partition", "0", "--start-offset", "0", "--yes"]),
    Case(
        "audit-markers",
        "nothing lost",
        lambda s: ["--topic", s.data],
        0,
        lambda doc, s: doc["findings"] == [],
    ),
    Case(
        "audit-markers",
        "open records nobody decided",
        lambda s: ["--topic", s.hang],
        ExitCode.PROBLEM_FOUND,
        lambda doc, s: [(f["topic"], f["kind"]) for f in doc["findings"]] == [(s.hang, "undetermined")],
    ),
    Case(
        "audit-markers",
        "no such partition",
        lambda s: ["--topic", s.data, "--partition", "99"],
        ExitCode.USAGE,
        lambda doc, s: "no partition 99" in doc["error"],
    ),
    Case(
        "audit-markers",
        "no such topic",
        lambda s: ["--topic", f"nope-{uuid.uuid4().hex[:6]}"],
        ExitCode.USAGE,
        lambda doc, s: "nope-" in doc["error"],
    ),
    Case(
        "audit-markers",
        "a window with nothing",
        lambda s: ["--topic", s.data, "--since", "1ms"],
        0,
        lambda doc, s: doc["findings"] == [],
    ),
    Case(
        "audit-markers",
        "a window in the future",
        lambda s: ["--since", "2999-01-01T00:00:00Z"],
        ExitCode.USAGE,
        lambda doc, s: "in the future" in doc["error"],
    ),
    _unreachable("audit-markers"),
    Case(
        "repair-markers",
        "nothing to repair",
        lambda s: ["--topic", s.data, "--yes"],
        0,
        lambda doc, s: doc["transactions"] == [],
    ),
    Case(
        "repair-markers",
        "an outcome for no partition",
        lambda s: ["--commit", "--yes"],
        ExitCode.USAGE,
        lambda doc, s: "--commit needs --topic and --partition" in doc["error"],
    ),
    _unreachable("repair-markers", lambda s: ["--yes"]),
    Case(
        "fence",
        "dry run",
        lambda s: [s.txid, "--dry-run"],
        ExitCode.PROBLEM_FOUND,
        lambda doc, s: doc["transactional_id"] == s.txid and doc["status"] == "problem_found",
    ),
    Case("fence", "unknown id", lambda s: [f"nope-{uuid.uuid4()}", "--yes"], ExitCode.ERROR),
    _unreachable("fence", lambda s: ["x", "--yes"]),
    Case(
        "complete",
        "no open transaction",
        lambda s: [s.txid, "--commit", "--yes"],
        ExitCode.USAGE,
        lambda doc, s: "has no open transaction" in doc["error"] and "CompleteCommit" in doc["error"],
    ),
    Case(
        "complete",
        "unknown id",
        lambda s: [f"nope-{uuid.uuid4()}", "--abort", "--yes"],
        ExitCode.ERROR,
        lambda doc, s: "unknown to its coordinator" in doc["error"],
    ),
    Case(
        "complete",
        "no outcome",
        lambda s: [s.txid, "--yes"],
        ExitCode.USAGE,
        lambda doc, s: "--commit or --abort" in doc["error"],
    ),
    _unreachable("complete", lambda s: ["x", "--commit", "--yes"]),
    Case(
        "monitor collect",
        "one hangs",
        lambda s: ["--topic", s.hang],
        0,
        lambda doc, s: [(p["topic"], p["hanging_transactions"]) for p in doc["partitions"]] == [(s.hang, 1)],
    ),
    Case(
        "monitor collect",
        "bad textfile directory",
        lambda s: ["--textfile", str(s.dir / "missing")],
        ExitCode.USAGE,
        lambda doc, s: "not a directory" in doc["error"],
    ),
    _unreachable("monitor collect"),
    # setup
    Case("cluster", "ok", lambda s: [], 0, lambda doc, s: doc["brokers"]),
    _unreachable("cluster"),
    Case(
        "topic create", "ok", lambda s: [f"doc-new-{uuid.uuid4().hex[:6]}"], 0, lambda doc, s: doc["created"]
    ),
    Case("topic create", "exists", lambda s: [s.data], ExitCode.ERROR, lambda doc, s: s.data in doc["error"]),
    _unreachable("topic create", lambda s: ["t"]),
    Case(
        "topic count",
        "ok",
        lambda s: [s.data],
        0,
        lambda doc, s: (
            doc["partitions"][-1]["kind"] == "total" and doc["partitions"][-1]["read_committed"] == 3
        ),
    ),
    Case(
        "topic count",
        "no topic",
        lambda s: ["no-such-topic-x"],
        ExitCode.USAGE,
        lambda doc, s: "no-such" in doc["error"],
    ),
    _unreachable("topic count", lambda s: ["t"]),
    _sandbox(
        "start",
        ExitCode.ERROR,
        lambda doc, s: "not a Kafka distribution" in doc["error"],
        "--port",
        "0",
        "--kafka-home",
        "{dir}",
    ),
    _sandbox("status", ExitCode.PROBLEM_FOUND, lambda doc, s: doc["running"] is False),
    _sandbox("stop", ExitCode.PROBLEM_FOUND, lambda doc, s: doc["stopped"] is False),
    _no_node("stop-node"),
    _no_node("kill-node"),
    _no_node("start-node"),
    _no_node("pause-node"),
    _no_node("resume-node"),
]


def _case(param) -> Case:
    return param.values[0] if hasattr(param, "values") else param


def _id(param) -> str:
    c = _case(param)
    return f"{c.command}-{c.situation}".replace(" ", "-")


# --- running one --------------------------------------------------------------------------------------
def _args(case: Case, s: Scene) -> list[str]:
    args = [a.replace("{dir}", str(s.dir)) for a in case.argv(s)]
    return [*case.command.split(), *args, "-o", "json"]


def _env(s: Scene) -> dict:
    return {"KXTX_BOOTSTRAP_SERVERS": s.kafka.bootstrap, "COLUMNS": "200"}


def _feed(stdin) -> None:
    """Lines on produce's stdin until it stops reading (a stop closes it)."""
    i = 0
    try:
        while True:
            stdin.write("".join(f'{{"k":"k{n % 50}","i":{n}}}\n' for n in range(i, i + 200)).encode())
            stdin.flush()
            i += 200
            time.sleep(0.002)
    except (BrokenPipeError, ValueError, OSError):
        pass


def _run_stopped(case: Case, s: Scene) -> tuple[int, str, str]:
    out, err = s.dir / f"{_id(case)}.out", s.dir / f"{_id(case)}.err"
    with open(out, "w") as o, open(err, "w") as e:
        proc = cli.start(
            *_args(case, s),
            stdin=subprocess.PIPE if case.feed else subprocess.DEVNULL,
            stdout=o,
            stderr=e,
            env=_env(s),
        )
    feeder = threading.Thread(target=_feed, args=(proc.stdin,), daemon=True) if case.feed else None
    try:
        if feeder:
            feeder.start()
        assert case.ready is not None and case.stop is not None
        wait_until(lambda: case.ready(proc, s), 120, f"{_id(case)}: ready for {case.stop.name}", procs=[proc])
        proc.send_signal(case.stop)
        # A stop during Spark's start waits for its JVM to finish starting (kxtx.signals.Guard): the
        # first pipe of a new virtualenv starts without a class-data archive, on a loaded CI
        # machine in up to ~100 s (measured: 102 s at load 20).
        code = proc.wait(240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdin:
            try:
                proc.stdin.close()
            except OSError:
                pass
    return code, out.read_text(), err.read_text()


def _run(case: Case, s: Scene) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, seconds)"""
    started = time.monotonic()
    if case.stop is not None:
        code, out, err = _run_stopped(case, s)
        return code, out, err, time.monotonic() - started
    r = cli.run(*_args(case, s), expect=None, env=_env(s), timeout=180)
    return r.returncode, r.stdout, r.stderr, time.monotonic() - started


@pytest.fixture(scope="module")
def outcomes(scene, request) -> dict[str, Future]:
    """Every selected row, started at once (10 at a time): most of a row's time is waiting for the
    broker, the JVM or a signal."""
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec") and "case" in item.callspec.params
    ]
    pool = ThreadPoolExecutor(max_workers=10)
    try:
        yield {_id(c): pool.submit(_run, c, scene) for c in selected}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("case", [pytest.param(c) if isinstance(c, Case) else c for c in CASES], ids=_id)
def test_one_json_document(scene, outcomes, case):
    code, out, err, took = outcomes[_id(case)].result(timeout=600)
    print(f"{_id(case)}: {took:.1f}s")
    assert code == case.code, f"exit {code}, expected {case.code}\n{err}"
    doc = json.loads(out)  # one whole document: a second one, or half of one, does not parse
    assert isinstance(doc, dict), out
    assert (doc["status"], doc["exit_code"]) == (status(code), code), doc
    if code in (ExitCode.OK, ExitCode.PROBLEM_FOUND):
        assert doc["error"] is None, doc
    else:  # the one line on stderr: "kxtx: error: MESSAGE" or, for a stop, "kxtx: MESSAGE"
        assert doc["error"], doc
        assert f"kxtx: {doc['error']}\n" in err or f"kxtx: error: {doc['error']}\n" in err, err
    assert case.check(doc, scene), json.dumps(doc, indent=2)[:3000]


# --- the rows cover the app ---------------------------------------------------------------------------
def _commands() -> dict[str, docs.Cmd]:
    return {" ".join(c.path[1:]): c for c in docs._leaves(docs.tree()) if not c.children}


#: Commands without -o: their output is another program's format. `monitor check` writes the
#: monitoring-plugin status line and exits with the plugin API's codes; `monitor serve` answers HTTP
#: and keeps serving (kxtx_up 0) when the cluster is down (both in tests/integration/test_monitor.py).
NO_JSON = {"monitor check", "monitor serve"}


def test_every_command_has_rows():
    covered = {_case(c).command for c in CASES} | NO_JSON
    assert set(_commands()) == covered, f"commands without a row: {set(_commands()) - covered}"
    assert not any(any("-o" in o.names for o in _commands()[name].options) for name in NO_JSON)


def test_every_command_that_connects_has_an_unreachable_row():
    unreachable = {_case(c).command for c in CASES if _case(c).situation == "unreachable"}
    connects = {name for name, c in _commands().items() if any("-b" in o.names for o in c.options)}
    assert connects - NO_JSON == unreachable
