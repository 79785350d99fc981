"""Every example in the README, in the pages under docs/ and in each command's --help runs against the
real test broker.

Examples are found by tests/examples.py. Each runnable example belongs to exactly one scenario
below (`SCENARIOS`: scenario -> regexes of the example texts it runs); `test_every_example_is_covered`
fails when an example is added, or changed, without a scenario, and when a scenario's example is gone.
The scenarios run the example text as found, with these substitutions only:

- topic, group and transactional-id names get a unique suffix (`orders` -> `orders-1a2b3c`), so
  runs do not see each other's data, also between colons (`dlq:NAME`, `TOPIC:P`, `committed:GROUP`); `-b localhost:9092` becomes the test broker;
- `kxtx sandbox start` gets `--port 0` (9092 may be taken on a shared machine) and a temporary
  `--state-dir` / KXTX_SANDBOX_DIR (and `~/.local/state/kxtx/sandbox` in a path becomes it);
- the README's first steps run as one bash script (their `eval` line sets the variable the next
  lines use), with `kxtx` a shell function running the kxtx under test, while port 9092 is held;
  so do its Schema Registry lines (a sandbox with a registry of its own), in a fresh HOME;
- `kxtx pipe`, which runs until stopped, gets `--until-idle 5` appended;
- node_exporter's textfile directory (`/var/lib/prometheus/node-exporter`) becomes a temporary one;
- `kxtx monitor serve`, which runs until stopped, gets `--port 0` for its `--port 9464`, is
  scraped once and stopped with SIGTERM;
- `kxtx --install-completion` runs in `bash -c` (typer installs for the shell it is typed in) with
  HOME in a temporary directory;
- `bash scripts/quickstart.sh` runs with KXTX_QUICKSTART_NO_INSTALL=1: kxtx is installed already,
  and pip must not touch the environment the tests run in.

Input files an example names (orders.jsonl, people.csv, ...) are written by the scenario, and the
topics an example expects to exist are created first unless the example block creates them itself.
Synopses (`kxtx fence TRANSACTIONAL_ID [--dry-run] [--yes]`) are not run: every option they show must
exist on that command (`test_synopses_name_real_options`).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import cli
from tests.conftest import ROOT
from tests.examples import Example, all_examples, python_blocks, readme_examples
from tests.integration.kafka_io import commit_offset

pytestmark = pytest.mark.kafka

SCENARIOS: dict[str, list[str]] = {
    "install-completion": [r"kxtx --install-completion"],
    "install": [
        r"python3 -m venv ~/\.venvs/kxtx && \. ~/\.venvs/kxtx/bin/activate",
        r"pip wheel \. --no-deps -w dist",
        r"pip install dist/kxtx-\*\.whl",
        r"pip install '\.\[spark\]'",
    ],
    "first-steps": [
        r'eval "\$\(kxtx sandbox start --port 0 --export\)"',
        r"kxtx topic create orders -p 6",
        r"kxtx produce orders\.jsonl -t orders -k order\.id",
        r"kxtx sandbox stop",
    ],
    "quickstart": [r"bash scripts/quickstart\.sh"],
    "produce": [
        r"kxtx topic create orders -p 6",
        r"kxtx produce orders\.jsonl\.gz -t orders -k order\.id",
        r"kxtx produce people\.csv -t people -k id --value-as-json --on-error dlq:people-bad",
        r"kxtx produce events\.jsonl -t events --dry-run",
        r"kxtx produce orders\.jsonl\.gz -t orders -k order\.id -b localhost:9092",
        r"kxtx topic create orders -p 6 -c retention\.ms=604800000",
    ],
    # The README's and pipe --help's example (the latter names enrich.py from the repository root):
    # both run, and both must give the enriched orders.
    "pipe": [r"kxtx pipe --in orders --out orders-enriched --udf (examples/)?enrich\.py:enrich .*"],
    "dump": [
        r"kxtx dump txn-state -t my-app-tx-1",
        r"kxtx dump txn-state --latest --state Ongoing",
        r"kxtx dump offsets -g my-group --latest -o json",
        r"kxtx dump partition orders --to lso -o json",
        r"kxtx dump partition orders:0 --from committed:my-group --records",
    ],
    "nodes": [
        r"kxtx sandbox start --brokers 3 --port 0",
        r"kxtx sandbox status",
        r"kxtx sandbox kill-node 2",
        r"kxtx sandbox start-node 2",
        r"kxtx sandbox stop-node 3",
        r"kxtx sandbox pause-node 1",
    ],
    # The README's and monitor check --help's (the same text).
    "monitor": [
        r"kxtx monitor collect -o json",
        r"kxtx monitor collect -o prometheus",
        r"kxtx monitor collect --textfile /var/lib/prometheus/node-exporter",
        r"kxtx monitor check --warn open-age=600 --crit hanging=0 --crit lag=10000",
        r"kxtx monitor serve --port 9464 --min-interval 30",
    ],
    # run as one bash script, in its order (the eval line sets what the next lines use)
    "registry": [
        r'eval "\$\(kxtx sandbox start --port 0 --export --schema-registry\)"',
        r"kxtx topic create orders-avro -p 2",
        r"kxtx topic create enriched-avro",
        r"kxtx produce orders\.jsonl -t orders-avro -k order\.id --value-schema examples/order\.avsc --register "
        r'--schema-registry "\$KXTX_SCHEMA_REGISTRY_URL"',
        r"kxtx pipe --in orders-avro --out enriched-avro --udf enrich\.py:enrich --value-format avro "
        r'--out-schema examples/enriched\.avsc --register --schema-registry "\$KXTX_SCHEMA_REGISTRY_URL" '
        r"--until-idle 5",
        r"kxtx dump partition enriched-avro:0 --records --value-format avro "
        r'--schema-registry "\$KXTX_SCHEMA_REGISTRY_URL"',
        r"kxtx sandbox stop",
    ],
    "security": [
        r"kxtx sandbox start --security sasl_ssl --port 0",
        r"kxtx find-hanging --command-config ~/\.local/state/kxtx/sandbox/security/admin\.properties",
    ],
}
#: Examples run elsewhere, with the reason and the tests that cover them.
ELSEWHERE = {
    r"kxtx (audit|repair)-markers --since 2h( --dry-run)?": "lost markers need a 3-node cluster and a "
    "fenced broker: tests/integration/test_multibroker_lost_markers.py runs both lines as written",
    r"bash scripts/test\.sh": "running the suite inside itself would recurse: tests/unit/test_test_script.py "
    "and tests/unit/test_ci_script.py run the script with a recording interpreter",
}
NAMES = (
    "orders-enriched",
    "orders",
    "people-bad",
    "people",
    "events",
    "enricher",
    "my-group",
    "my-app-tx-1",
)


def _scenario_of(ex: Example) -> list[str]:
    hits = [name for name, pats in SCENARIOS.items() if any(re.fullmatch(p, ex.text) for p in pats)]
    hits += ["(elsewhere)" for p in ELSEWHERE if re.fullmatch(p, ex.text)]
    return hits


def _examples(scenario: str) -> list[Example]:
    return [e for e in all_examples() if not e.synopsis and scenario in _scenario_of(e)]


# --- coverage --------------------------------------------------------------------------------------
def test_every_example_is_covered():
    examples = [e for e in all_examples() if not e.synopsis]
    uncovered = [f"{e.source}: {e.text}" for e in examples if not _scenario_of(e)]
    assert not uncovered, f"examples no scenario runs (add them to SCENARIOS): {uncovered}"
    for name, patterns in {**SCENARIOS, "(elsewhere)": list(ELSEWHERE)}.items():
        for p in patterns:
            assert any(re.fullmatch(p, e.text) for e in examples), f"{name}: no example matches {p!r}"


def test_a_new_example_without_a_scenario_is_found():
    readme = (
        "intro\n\n    kxtx topic create orders -p 6\n    kxtx produce new.jsonl -t new   # new\n\n"
        "```bash\nkxtx cluster -o json\n```\n\n    kxtx fence ID [--yes]\n"
    )
    found, _ = readme_examples(readme)
    assert [(e.text, e.synopsis) for e in found] == [
        ("kxtx topic create orders -p 6", False),
        ("kxtx produce new.jsonl -t new", False),
        ("kxtx cluster -o json", False),
        ("kxtx fence ID [--yes]", True),
    ]
    assert [bool(_scenario_of(e)) for e in found[:3]] == [True, False, False]


def test_synopses_name_real_options():
    from kxtx.cli import docs

    commands = {" ".join(c.path): c for c in docs._leaves(docs.tree())}
    synopses = [e for e in all_examples() if e.synopsis]
    assert len(synopses) >= 8
    for ex in synopses:
        words = ex.text.split()
        path = ["kxtx"]
        while len(words) > len(path) and " ".join([*path, words[len(path)]]) in commands:
            path.append(words[len(path)])
        cmd = commands[" ".join(path)]
        known = {n for o in cmd.options for n in o.names}
        shown = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", ex.text))
        assert shown <= known, f"{ex.source}: {sorted(shown - known)} not options of {' '.join(path)}"


def test_python_examples_do_what_they_say():
    import pandas as pd

    (block,) = python_blocks()  # docs/pipe.md's UDF examples
    ns: dict = {}
    exec(compile(block, "docs/pipe.md (python example)", "exec"), ns)
    order = {"amount": 150, "region": "eu", "items": [{"sku": "a"}, {"sku": "b"}]}
    assert ns["keep_big"](order) is order and ns["keep_big"]({"amount": 5}) is None
    assert ns["explode"](order) == [{"key": "a", "value": {"sku": "a"}}, {"key": "b", "value": {"sku": "b"}}]
    assert (
        ns["route"](order)["topic"] == "eu-orders" and ns["route"]({"region": "us"})["topic"] == "us-orders"
    )
    assert list(ns["upper"].func(pd.Series(["ab", "c"]))) == ["AB", "C"]


# --- running them ----------------------------------------------------------------------------------
@dataclass
class Ctx:
    kafka: object
    dir: Path
    names: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def argv(self, text: str) -> list[str]:
        words = []
        for w in shlex.split(text):
            # a name alone or between colons: dlq:NAME, TOPIC:P, committed:GROUP
            w = ":".join(self.names.get(part, part) for part in w.split(":"))
            words.append(w.replace("~/.local/state/kxtx/sandbox", self.env.get("KXTX_SANDBOX_DIR", "~")))
        if words[:1] == ["kxtx"]:
            words = cli.argv(*words[1:])
        if "-b" in words and words[words.index("-b") + 1] == "localhost:9092":
            words[words.index("-b") + 1] = self.kafka.bootstrap
        if words[3:5] == ["sandbox", "start"] and "--port" not in words:
            words += ["--port", "0"]
        if words[3:4] == ["pipe"]:
            words += ["--until-idle", "5"]
        return words

    def run(self, ex: Example, expect: int = 0, timeout: float = 600) -> subprocess.CompletedProcess:
        env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": self.kafka.bootstrap, **self.env}
        r = subprocess.run(
            self.argv(ex.text),
            cwd=self.dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        assert r.returncode == expect, f"{ex.source}: {ex.text}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
        return r


@pytest.fixture
def ctx(kafka, tmp_path):
    suffix = uuid.uuid4().hex[:6]
    c = Ctx(kafka, tmp_path, {n: f"{n}-{suffix}" for n in NAMES})
    orders = "".join(
        json.dumps({"order": {"id": i}, "amount": i / 10, "status": "cancelled" if i % 10 == 0 else "paid"})
        + "\n"
        for i in range(200)
    )
    (tmp_path / "orders.jsonl").write_text(orders)
    (tmp_path / "orders.jsonl.gz").write_bytes(gzip.compress(orders.encode()))
    (tmp_path / "people.csv").write_text("id,name\n1,ada\n2,grace\n3,bad,extra column\n4,linus\n")
    (tmp_path / "events.jsonl").write_text('{"e": 1}\n{"e": 2}\n')
    shutil.copy(ROOT / "examples" / "enrich.py", tmp_path / "enrich.py")
    (tmp_path / "examples").mkdir()  # pipe --help names it as seen from the repository's root
    shutil.copy(ROOT / "examples" / "enrich.py", tmp_path / "examples" / "enrich.py")
    for schema in ("order.avsc", "enriched.avsc"):
        shutil.copy(ROOT / "examples" / schema, tmp_path / "examples" / schema)
    return c


def _rows(r) -> list[dict]:
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def test_install_completion(ctx, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (ex,) = _examples("install-completion")
    r = subprocess.run(
        ["bash", "-c", shlex.join(ctx.argv(ex.text))],
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kxtx" in (home / ".bashrc").read_text()


def test_install_lines(tmp_path):
    """The README's install lines as written, in a copy of the tracked files (a fresh clone), with
    HOME in a temporary directory so that their virtualenv is a new one: first the wheel (kxtx from
    site-packages, not the clone), then the clone with the spark extra, in that virtualenv. pip's
    cache is the real one (nothing is fetched twice across runs)."""
    src = tmp_path / "clone"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    venv, wheel, install_wheel, install_clone = (_by("install", p).text for p in SCENARIOS["install"])
    # run outside the clone, so that `import kxtx` cannot come from the current directory
    where = '(cd / && kxtx --version && python -c "import kxtx; print(kxtx.__file__)")'
    spark = '(cd / && python -c "import pyspark; print(pyspark.__version__)")'
    script = "\n".join(["set -e", venv, wheel, install_wheel, where, install_clone, where, spark])
    pip_cache = subprocess.run(
        [sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True
    ).stdout.strip()
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    # python3 is the interpreter that runs the tests (>= 3.10), not the virtualenv it runs in
    env.update(HOME=str(home), PIP_CACHE_DIR=pip_cache or str(Path.home() / ".cache" / "pip"))
    env["PATH"] = os.pathsep.join([str(Path(sys.base_prefix) / "bin"), env["PATH"]])
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # pip's settings, not the lines: no byte-compiling of the ~2,500 modules of pyspark, pandas,
    # pyarrow and numpy in a throw-away virtualenv that imports a few of them once.
    env["PIP_NO_COMPILE"] = "1"
    r = subprocess.run(["bash", "-c", script], cwd=src, env=env, capture_output=True, text=True, timeout=1500)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    out = [line for line in r.stdout.splitlines() if line.startswith(("kxtx ", "/"))]
    site = str(home / ".venvs" / "kxtx" / "lib")
    # the wheel, then the clone: both installed kxtx into the new virtualenv's site-packages
    assert len(out) == 4 and out[0].startswith("kxtx ") and out[2].startswith("kxtx "), r.stdout
    assert out[1].startswith(site) and "site-packages" in out[1], r.stdout
    assert out[3].startswith(site) and "site-packages" in out[3], r.stdout
    assert r.stdout.splitlines()[-1][:1].isdigit(), r.stdout  # pyspark's version


def test_first_steps(ctx, tmp_path):
    """The README's first steps pasted into one shell, in their order, while port 9092 is taken: the
    `eval` line must set KXTX_BOOTSTRAP_SERVERS to the sandbox it started, for the lines after it."""
    steps = [_by("first-steps", p) for p in SCENARIOS["first-steps"]]
    assert [int(e.source.split(":")[1]) for e in steps] == sorted(int(e.source.split(":")[1]) for e in steps)
    script = "\n".join(
        [
            "set -e",
            'kxtx() { "$KXTX_TEST_PYTHON" -m kxtx "$@"; }',  # the kxtx under test, as the shell's `kxtx`
            *(e.text for e in steps[:-1]),
            'echo "bootstrap: $KXTX_BOOTSTRAP_SERVERS" >&2',
            steps[-1].text,
        ]
    )
    env = {**os.environ, "KXTX_TEST_PYTHON": sys.executable, "KXTX_SANDBOX_DIR": str(tmp_path / "sandbox")}
    env.pop("KXTX_BOOTSTRAP_SERVERS", None)  # only the eval line may set it
    with _port_taken(9092):
        try:
            r = subprocess.run(
                ["bash", "-c", script],
                cwd=ctx.dir,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
                stdin=subprocess.DEVNULL,
            )
        finally:
            subprocess.run(
                cli.argv("sandbox", "stop"),
                env=env,
                capture_output=True,
                timeout=300,
                stdin=subprocess.DEVNULL,
            )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    (bootstrap,) = [
        line.split(": ", 1)[1] for line in r.stderr.splitlines() if line.startswith("bootstrap: ")
    ]
    assert bootstrap.startswith("127.0.0.1:") and bootstrap != "127.0.0.1:9092", r.stderr
    summaries = [row for row in _rows(r) if "records" in row]
    assert [row["records"] for row in summaries] == [200], r.stdout


@contextlib.contextmanager
def _port_taken(port: int):
    """Hold 127.0.0.1:PORT while the block runs (when something else holds it already, it is taken too)."""
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen()
    except OSError:
        pass
    try:
        yield
    finally:
        sock.close()


def test_node_examples(ctx, tmp_path):
    """The incident rehearsal of docs/sandbox.md, in its order, on a 3-node sandbox of its own."""
    start, status, kill, restart, stop_node, pause = (_by("nodes", p) for p in SCENARIOS["nodes"])
    ctx.env["KXTX_SANDBOX_DIR"] = str(tmp_path / "sandbox")

    def states(expect: int) -> dict[int, str]:
        return {n["id"]: n["state"] for n in _rows(ctx.run(status, expect=expect))[0]["nodes"]}

    try:
        ctx.run(start, timeout=900)
        assert states(0) == {1: "running", 2: "running", 3: "running"}
        assert _rows(ctx.run(kill))[0]["node"] == 2
        assert states(3)[2] == "stopped"
        ctx.run(restart, timeout=600)
        ctx.run(stop_node, timeout=600)
        assert states(3) == {1: "running", 2: "running", 3: "stopped"}
        ctx.run(pause)
        assert states(3)[1] == "paused"
    finally:
        for word in ("resume-node 1", "stop"):
            subprocess.run(
                cli.argv("sandbox", *word.split()),
                timeout=600,
                env={**os.environ, **ctx.env},
                capture_output=True,
                stdin=subprocess.DEVNULL,
            )


def test_quickstart(ctx):
    (ex,) = _examples("quickstart")
    ctx.env.update(KXTX_QUICKSTART_NO_INSTALL="1", PYTHON=sys.executable)
    env = {**os.environ, **ctx.env}
    env.pop("KXTX_BOOTSTRAP_SERVERS", None)
    r = subprocess.run(
        shlex.split(ex.text),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    assert "quickstart: done" in r.stderr


def test_produce_examples(ctx):
    create, gz, people, events, gz_b, create_config = (_by("produce", p) for p in SCENARIOS["produce"])
    for name in ("people", "people-bad", "events"):
        ctx.kafka.create_topic(ctx.names[name])
    ctx.run(create)
    first = _rows(ctx.run(gz))[0]
    assert first["records"] == 200
    assert _rows(ctx.run(gz))[0]["records"] == 0  # the same command again: nothing to do
    row = _rows(ctx.run(people))[0]
    assert row["records"] == 3 and row["dead_lettered"] == 1, row
    ctx.run(events)
    assert _rows(ctx.run(gz_b))[0]["records"] == 0  # same input and topic: already done
    ctx.names["orders"] = ctx.names["orders"] + "-2"
    ctx.run(create_config)


def _by(scenario: str, pattern: str) -> Example:
    """The first example of `scenario` matching `pattern` (the same text may be shown twice)."""
    return next(e for e in _examples(scenario) if re.fullmatch(pattern, e.text))


def test_pipe_examples(ctx):
    src = ctx.kafka.create_topic(ctx.names["orders"], partitions=2)
    ctx.kafka.create_topic(ctx.names["orders-enriched"], partitions=2)
    subprocess.run(
        cli.argv("produce", "orders.jsonl", "-t", src, "-k", "order.id", "-b", ctx.kafka.bootstrap),
        cwd=ctx.dir,
        check=True,
        capture_output=True,
    )
    examples = _examples("pipe")
    assert len(examples) == 2  # the README's and pipe --help's
    for ex in examples:
        ctx.names["enricher"] = f"enricher-{uuid.uuid4().hex[:6]}"  # a new group: from the start
        summary = _rows(ctx.run(ex, timeout=900))[-1]
        # enrich.py drops the cancelled tenth of the 200 orders
        assert summary["records_in"] == 200 and summary["records_out"] == 180, summary


@pytest.mark.spark
def test_registry_examples(ctx, tmp_path):
    """The README's Schema Registry lines pasted into one shell in a fresh HOME (kxtx's cache dir the
    real one: the Kafka jars and the registry's binary are not fetched again): the eval line starts
    a sandbox with its registry and sets KXTX_SCHEMA_REGISTRY_URL for the lines after it; its
    `sandbox stop` leaves no registry process."""

    def line(e: Example) -> int:
        return int(e.source.split(":")[1])

    steps = [_by("registry", p) for p in SCENARIOS["registry"]]
    # its own `sandbox stop` (first steps show one too): the one after the eval line
    steps[-1] = next(
        e for e in _examples("registry") if e.text == steps[-1].text and line(e) > line(steps[0])
    )
    assert [line(e) for e in steps] == list(range(line(steps[0]), line(steps[0]) + len(steps)))
    home = tmp_path / "home"
    home.mkdir()
    script = "\n".join(
        [
            "set -e",
            'kxtx() { "$KXTX_TEST_PYTHON" -m kxtx "$@"; }',
            *(e.text for e in steps[:-1]),
            "kxtx sandbox status -o json > status.json",
            steps[-1].text,
        ]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KXTX_", "XDG_"))}
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"),
        KXTX_TEST_PYTHON=sys.executable,
    )
    env.update({k: v for k, v in os.environ.items() if k.startswith("KXTX_SANDBOX_JVM")})
    state = home / ".local" / "state" / "kxtx" / "sandbox"
    try:
        r = subprocess.run(
            ["bash", "-c", script],
            cwd=ctx.dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
    finally:
        subprocess.run(
            cli.argv("sandbox", "stop", "--state-dir", str(state)), env=env, capture_output=True, timeout=300
        )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "kxtx: building" not in r.stderr and "kxtx: fetching" not in r.stderr, r.stderr  # all cached
    rows = _rows(r)
    produced = [row["records"] for row in rows if "records" in row and "kind" not in row]
    assert produced == [200], r.stdout[-2000:]
    summary = [row for row in rows if "records_in" in row][-1]
    assert summary["records_in"] == 200 and summary["records_out"] == 180, summary
    records = [row for row in rows if row.get("kind") == "record"]
    assert len(records) == 180 and records[0]["value_subject"] == "enriched-avro-value", records[0]
    assert all(row["value"]["total_cents"] == round(row["value"]["amount"] * 100) for row in records)
    registry = json.loads((ctx.dir / "status.json").read_text())["schema_registry"]
    assert registry["state"] == "running" and registry["url"].startswith("http://127.0.0.1:"), registry
    assert not _alive(registry["pid"]), "sandbox stop returned while the schema registry still runs"
    assert not state.exists()


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def test_dump_examples(ctx):
    by_id, ongoing, offsets, partition, records = (_by("dump", p) for p in SCENARIOS["dump"])
    topic = ctx.kafka.create_topic(ctx.names["orders"])
    subprocess.run(
        cli.argv(
            "produce",
            "events.jsonl",
            "-t",
            topic,
            "--transactional-id",
            ctx.names["my-app-tx-1"],
            "-b",
            ctx.kafka.bootstrap,
        ),
        cwd=ctx.dir,
        check=True,
        capture_output=True,
    )
    # retried while a fresh broker's group coordinator loads (NOT_COORDINATOR when run alone)
    commit_offset(ctx.kafka.bootstrap, ctx.names["my-group"], topic, 0, 1)
    history = ctx.run(by_id).stdout.splitlines()
    assert history and all(ctx.names["my-app-tx-1"] in line for line in history), history
    assert any("CompleteCommit" in line for line in history), history
    ctx.run(ongoing)
    doc = json.loads(ctx.run(offsets).stdout)
    assert ctx.names["my-group"] in json.dumps(doc)
    # events.jsonl's two records, committed in one transaction: two records and a COMMIT marker
    s = json.loads(ctx.run(partition).stdout)["summary"][0]
    assert (s["records"], s["markers"], s["committed_records"], s["read_committed"]) == (2, 1, 2, 2), s
    # my-group committed offset 1: the second record is what it has yet to read (jsonl off a terminal)
    rows = [json.loads(line) for line in ctx.run(records).stdout.splitlines()]
    got = [(r["offset"], r["value"], r["fate"], r["read_committed"]) for r in rows if r["kind"] == "record"]
    assert got == [(1, '{"e": 2}', "committed", True)], rows


def test_security_examples(ctx):
    start, find = (_by("security", p) for p in SCENARIOS["security"])
    state = tempfile.mkdtemp(prefix="kxtx-example-sec-")
    ctx.env["KXTX_SANDBOX_DIR"] = state
    try:
        ctx.run(start)
        env_bootstrap = ctx.kafka.bootstrap
        ctx.kafka = type(ctx.kafka)("", None, None)  # only the properties file says where
        ctx.run(find)  # exits 0
        ctx.kafka = type(ctx.kafka)(env_bootstrap, None, None)
    finally:
        subprocess.run(
            cli.argv("sandbox", "stop", "--state-dir", state),
            capture_output=True,
            timeout=120,
        )


def test_monitor_examples(ctx):
    import dataclasses

    from prometheus_client.parser import text_string_to_metric_families

    as_json, as_prom, textfile, check, serve = (_by("monitor", p) for p in SCENARIOS["monitor"])
    doc = json.loads(ctx.run(as_json).stdout)
    assert doc["status"] == "ok" and {"partitions", "groups", "transactional_id_states"} <= set(doc)
    up = {s.name: s.value for f in text_string_to_metric_families(ctx.run(as_prom).stdout) for s in f.samples}
    assert up["kxtx_up"] == 1
    d = ctx.dir / "textfile"
    d.mkdir()
    ctx.run(
        dataclasses.replace(textfile, text=textfile.text.replace("/var/lib/prometheus/node-exporter", str(d)))
    )
    assert "kxtx_up 1" in (d / "kxtx.prom").read_text().splitlines()
    # the session broker is shared: another test's open transaction may make it WARNING; the line
    # and the exit code must agree
    r = subprocess.run(
        ctx.argv(check.text),
        cwd=ctx.dir,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "KXTX_BOOTSTRAP_SERVERS": ctx.kafka.bootstrap},
    )
    word = r.stdout.split(" ")[1]
    assert (word, r.returncode) in {("OK", 0), ("WARNING", 1), ("CRITICAL", 2)}, r.stdout + r.stderr
    assert r.stdout.count("\n") == 1 and " | hanging=" in r.stdout
    _serve_example(ctx, serve)


def _serve_example(ctx, serve):
    import urllib.request

    from tests.integration.monitor_helpers import serving

    argv = ctx.argv(serve.text.replace("--port 9464", "--port 0"))
    env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": ctx.kafka.bootstrap}
    with serving(argv, env, ctx.dir) as url, urllib.request.urlopen(url, timeout=120) as r:
        assert "kxtx_up 1" in r.read().decode().splitlines()
