"""kxtx monitor's pure outputs: the plugin range syntax, check verdicts and perfdata, the Prometheus
exposition (parsed by prometheus_client's own parser) and the textfile's atomic write."""

from __future__ import annotations

import math
import os
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kxtx.errors import UsageError
from kxtx.monitor import check, exposition, snapshot
from kxtx.monitor.snapshot import GroupLag, PartitionHealth, Snapshot
from kxtx.ops.model import HangingTxn

INF = math.inf


@pytest.mark.parametrize(
    ("text", "start", "end", "inside"),
    [
        ("10", 0, 10, False),
        ("10:", 10, INF, False),
        ("~:10", -INF, 10, False),
        ("10:20", 10, 20, False),
        ("@10:20", 10, 20, True),
        ("0", 0, 0, False),
        (":5", 0, 5, False),
        ("@~:0", -INF, 0, True),
        ("1.5:2.5", 1.5, 2.5, False),
    ],
)
def test_parse_range(text, start, end, inside):
    r = check.parse_range(text)
    assert (r.start, r.end, r.inside, r.text) == (start, end, inside, text)


@pytest.mark.parametrize("text", ["", "@", "a", "20:10", "1:x", "~"])
def test_parse_range_refuses(text):
    with pytest.raises(UsageError):
        check.parse_range(text)


@pytest.mark.parametrize(
    ("rng", "value", "alerts"),
    [
        ("10", -1, True),
        ("10", 0, False),
        ("10", 10, False),
        ("10", 11, True),
        ("10:", 9, True),
        ("10:", 10, False),
        ("~:10", -100, False),
        ("~:10", 10.5, True),
        ("10:20", 9, True),
        ("10:20", 15, False),
        ("10:20", 21, True),
        ("@10:20", 10, True),
        ("@10:20", 20, True),
        ("@10:20", 21, False),
        ("0", 1, True),
        ("0", 0, False),
    ],
)
def test_range_alerts(rng, value, alerts):
    assert check.parse_range(rng).alerts(value) is alerts


def test_thresholds_repeatable_and_comma_separated():
    got = check.parse_thresholds(["hanging=0,lag=100", "open-age=600:"], "--warn")
    assert {k: r.text for k, r in got.items()} == {"hanging": "0", "lag": "100", "open-age": "600:"}
    for bad in (["nope=1"], ["hanging"], ["lag=x"]):
        with pytest.raises(UsageError):
            check.parse_thresholds(bad, "--crit")


ZERO = {"hanging": 0, "open-age": 0, "lso-gap": 0, "lag": 0}


@pytest.mark.parametrize(
    ("values", "warn", "crit", "incomplete", "status", "perf"),
    [
        (
            ZERO,
            [],
            [],
            "",
            check.PluginStatus.OK,
            "hanging=0;;0;0; open_age=0s;;;0; lso_gap=0;;;0; lag=0;;;0;",
        ),
        # the default: any hanging transaction is critical
        ({**ZERO, "hanging": 1}, [], [], "", check.PluginStatus.CRITICAL, "hanging=1;;0;0;"),
        # a warn threshold on hanging replaces the default critical one
        ({**ZERO, "hanging": 1}, ["hanging=0"], [], "", check.PluginStatus.WARNING, "hanging=1;0;;0;"),
        (
            {**ZERO, "open-age": 700.5},
            ["open-age=600"],
            ["open-age=3600"],
            "",
            check.PluginStatus.WARNING,
            "open_age=700.5s;600;3600;0;",
        ),
        (
            {**ZERO, "open-age": 4000},
            ["open-age=600"],
            ["open-age=3600"],
            "",
            check.PluginStatus.CRITICAL,
            "open_age=4000s;600;3600;0;",
        ),
        ({**ZERO, "lag": 50}, ["lag=100"], ["lag=1000"], "", check.PluginStatus.OK, "lag=50;100;1000;0;"),
        (
            {**ZERO, "lso-gap": 5},
            ["lso-gap=@1:10"],
            [],
            "",
            check.PluginStatus.WARNING,
            "lso_gap=5;@1:10;;0;",
        ),
        (ZERO, [], [], "2 partitions not seen", check.PluginStatus.WARNING, "hanging=0;;0;0;"),
        ({**ZERO, "hanging": 2}, [], [], "1 group not seen", check.PluginStatus.CRITICAL, "hanging=2;;0;0;"),
    ],
)
def test_verdict_and_perfdata(values, warn, crit, incomplete, status, perf):
    got, line = check.verdict(
        values, check.parse_thresholds(warn, "--warn"), check.parse_thresholds(crit, "--crit"), incomplete
    )
    assert got is status
    text, sep, perfdata = line.partition(" | ")
    assert sep and "\n" not in line
    assert text.startswith(f"KXTX {status.name} - ")
    assert perf in perfdata
    # plugin perfdata: label=value[UOM];warn;crit;min;max, space separated, one per metric
    assert [p.split("=")[0] for p in perfdata.split(" ")] == ["hanging", "open_age", "lso_gap", "lag"]
    assert all(p.count(";") == 4 for p in perfdata.split(" "))
    if incomplete:
        assert incomplete in text


def test_unknown_is_one_line():
    assert check.unknown("no broker\nreachable") == "KXTX UNKNOWN - no broker reachable"


def _snapshot() -> Snapshot:
    snap = Snapshot(
        collected_at_ms=1_700_000_000_123, duration_s=0.25, max_timeout_ms=900_000, partitions_checked=7
    )
    snap.partitions = [
        PartitionHealth('we"ird\\topic', 0, 10, 4, 6, 2, 4, 11, "tx-1", None, 3700.5, 1),
        PartitionHealth("orders", 3, 20, 20, 0, 1, 19, 12, "tx-2", 12.0, 2.0, 0),
    ]
    snap.hanging = [HangingTxn('we"ird\\topic', 0, 11, 0, 0, 4, 0, 3_700_500, "no transactional id")]
    snap.states = {"Ongoing": 1, "CompleteCommit": 3}
    snap.oldest_in_state_s = {"Ongoing": 12.0}
    snap.groups = [
        GroupLag("g1", "orders", 0, 5, 8, 8, 3, 0, 3, True),
        GroupLag("g1", "orders", 1, 5, 9, 9, 4, 2, 2, True),
        GroupLag("g2", "orders", 0, 0, 8, 8, 8, 8, None, False),
    ]
    snap.unseen = [{"what": "groups", "name": "secret-group", "why": "GROUP_AUTHORIZATION_FAILED"}]
    return snap


def _parsed(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_exposition_parses_and_follows_the_naming_rules():
    text = exposition.exposition(_snapshot(), "9.9.9")
    fams = _parsed(text)
    for name, fam in fams.items():
        assert name.startswith("kxtx_")
        assert not name.endswith("_total")  # gauges only: no counters in a one-shot collection
        assert fam.type == "gauge" and fam.documentation
        for s in fam.samples:
            assert s.timestamp is None  # Prometheus stamps the scrape
            assert set(s.labels) <= {"topic", "partition", "group", "state", "what", "kind", "version"}
    assert "kxtx_info" in fams and fams["kxtx_info"].samples[0].value == 1
    lines = text.splitlines()
    for name in fams:  # HELP then TYPE before each family's samples
        assert (
            lines.index(f"# TYPE {name} gauge")
            == lines.index(next(x for x in lines if x.startswith(f"# HELP {name} "))) + 1
        )
    by = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in fams.values() for s in f.samples}
    weird = (("partition", "0"), ("topic", 'we"ird\\topic'))
    assert by[("kxtx_partition_hanging_transactions", weird)] == 1
    assert by[("kxtx_partition_lso_gap_records", weird)] == 6
    assert by[("kxtx_partition_oldest_open_last_write_age_seconds", weird)] == 3700.5
    # unknown begin time: no sample rather than a made-up value
    assert ("kxtx_partition_oldest_open_age_seconds", weird) not in by
    assert by[("kxtx_partition_oldest_open_age_seconds", (("partition", "3"), ("topic", "orders")))] == 12.0
    assert by[("kxtx_hanging_transactions", ())] == 1
    assert by[("kxtx_up", ())] == 1
    assert by[("kxtx_transactional_ids", (("state", "CompleteCommit"),))] == 3
    assert by[("kxtx_transactional_ids", (("state", "Dead"),))] == 0  # every state, so none vanishes
    assert by[("kxtx_transactional_id_oldest_age_seconds", (("state", "Ongoing"),))] == 12.0
    # per group and topic, summed over partitions
    assert by[("kxtx_consumergroup_lag_records", (("group", "g1"), ("topic", "orders")))] == 2
    assert by[("kxtx_consumergroup_hw_lag_records", (("group", "g1"), ("topic", "orders")))] == 7
    assert by[("kxtx_consumergroup_invisible_records", (("group", "g1"), ("topic", "orders")))] == 5
    assert by[("kxtx_collect_unseen", (("what", "groups"),))] == 1
    assert by[("kxtx_collect_timestamp_seconds", ())] == 1_700_000_000.123
    assert by[("kxtx_transaction_max_timeout_seconds", ())] == 900
    # bounded labels: never a producer id, transactional id or unseen item's name
    assert "tx-1" not in text and "secret-group" not in text


@pytest.mark.parametrize(
    ("values", "floors", "warn", "crit", "status", "words"),
    [
        # issue 43: a value not read is not 0: a threshold on it is UNKNOWN, never OK
        ({**ZERO, "lag": None}, ZERO, [], ["lag=10"], check.PluginStatus.UNKNOWN, "lag=U;;10;0;"),
        ({**ZERO, "lso-gap": None}, ZERO, ["lso-gap=1"], [], check.PluginStatus.UNKNOWN, "lso_gap=U;1;;0;"),
        # ... unless the part seen already lies above the range: then the alert is sure
        (
            {**ZERO, "lag": None},
            {**ZERO, "lag": 15},
            [],
            ["lag=10"],
            check.PluginStatus.CRITICAL,
            "in records at least 15 (critical 10)",
        ),
        # the default critical on hanging: unknown when producers were not read and none seen
        (
            {**ZERO, "hanging": None},
            ZERO,
            [],
            [],
            check.PluginStatus.UNKNOWN,
            "hanging transactions not known",
        ),
        (
            {**ZERO, "hanging": None},
            {**ZERO, "hanging": 2},
            [],
            [],
            check.PluginStatus.CRITICAL,
            "at least 2",
        ),
        # a range alerting inside (@) is never sure from a lower bound
        ({**ZERO, "lag": None}, {**ZERO, "lag": 5}, [], ["lag=@1:10"], check.PluginStatus.UNKNOWN, "lag=U;"),
        # another metric's alert stands; the unknown one is still named
        (
            {**ZERO, "lag": None, "open-age": 900},
            ZERO,
            ["open-age=600"],
            ["lag=10"],
            check.PluginStatus.WARNING,
            "largest read_committed lag of a group on a topic in records not known",
        ),
        # no threshold on the unknown metric: the incomplete collection's WARNING only
        ({**ZERO, "lag": None}, ZERO, [], [], check.PluginStatus.WARNING, "lag=U;;;0;"),
    ],
)
def test_verdict_on_values_not_read(values, floors, warn, crit, status, words):
    got, line = check.verdict(
        values,
        check.parse_thresholds(warn, "--warn"),
        check.parse_thresholds(crit, "--crit"),
        "1 thing not seen",
        floors,
    )
    assert got is status, line
    assert line.startswith(f"KXTX {status.name} - ") and words in line, line
    assert all(p.count(";") == 4 for p in line.partition(" | ")[2].split(" "))


def test_group_topic_lags_are_none_when_a_partition_was_not_read():
    """The exported sum and check's `lag` (the same function): a partition not read makes its
    group and topic's sum unknown, not the sum of the others."""

    def row(topic, p, lag, hw, inv):
        return snapshot.GroupLag("g", topic, p, 0, hw, lag, hw, lag, inv, inv is not None)

    snap = snapshot.Snapshot(
        groups=[
            row("a", 0, 3, 5, 2),
            row("a", 1, 4, 4, None),
            row("b", 0, None, 9, None),
            row("b", 1, 1, None, 0),
        ]
    )
    assert snapshot.group_topic_lags(snap) == {("g", "a"): (7, 9, 2), ("g", "b"): (None, None, None)}
    assert snap.summary()["max_group_lag_records"] is None
    assert snap.summary(floor=True)["max_group_lag_records"] == 7
    assert snap.summary(floor=True)["max_read_committed_lag_records"] == 4


def test_failure_exposition_says_down_and_nothing_else():
    fams = _parsed(exposition.failure("1.0", 2.5))
    assert set(fams) == {"kxtx_info", "kxtx_up", "kxtx_collect_duration_seconds"}
    assert fams["kxtx_up"].samples[0].value == 0


def test_textfile_is_never_seen_half_written(tmp_path):
    """A reader reading while kxtx rewrites the file sees the old or the new content, whole."""
    texts = [
        exposition.render([exposition.Family("x", "h", [({"n": str(i)}, float(i))] * 4000)]) for i in range(2)
    ]
    exposition.write_textfile(str(tmp_path), "kxtx.prom", texts[0])
    stop = threading.Event()
    seen: list[str] = []
    bad: list[str] = []

    def reader():
        while not stop.is_set():
            with open(tmp_path / "kxtx.prom") as f:
                got = f.read()
            seen.append(got[:1])
            if got not in texts:
                bad.append(got[-80:])

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(200):
            exposition.write_textfile(str(tmp_path), "kxtx.prom", texts[i % 2])
    finally:
        stop.set()
        t.join()
    assert not bad and len(seen) > 1
    assert os.listdir(tmp_path) == ["kxtx.prom"]  # no temporary file left behind
    assert (os.stat(tmp_path / "kxtx.prom").st_mode & 0o777) == 0o644


def test_textfile_refuses_a_path_as_name_and_a_missing_directory(tmp_path):
    with pytest.raises(UsageError):
        exposition.write_textfile(str(tmp_path), "a/b.prom", "")
    with pytest.raises(UsageError):
        exposition.write_textfile(str(tmp_path / "nope"), "kxtx.prom", "")


def test_readme_exit_code_table_names_the_check_exception():
    from tests.conftest import ROOT

    (row,) = [
        line
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("| `0`\u2013`3` (`monitor check`")  # an en dash, as in the README
    ]
    assert all(f"{s.value} {s.name}" in row for s in check.PluginStatus)


def test_shipped_alert_rules_use_only_metrics_kxtx_exposes():
    """Every kxtx_ name in the rules and in their promtool unit tests (test_prometheus_rules.py) is one
    kxtx writes: a renamed metric cannot leave a rule, or its test, watching nothing."""
    import re

    from tests.conftest import ROOT

    audited = _snapshot()
    audited.markers_audited, audited.lost_markers = True, {"lost-commit-open": 1}
    exposed = set(_parsed(exposition.exposition(audited, "1"))) | {
        "kxtx_collections_total",
        "kxtx_collection_failures_total",
    }
    rules = (ROOT / "examples" / "prometheus" / "kxtx-alerts.yml").read_text()
    tests = (ROOT / "examples" / "prometheus" / "kxtx-alerts_test.yml").read_text()
    used = set(re.findall(r"\bkxtx_[a-z_]+", rules + tests))
    assert used and used <= exposed, used - exposed
    alerts = re.findall(r"^\s+- alert: (\w+)$", rules, re.M)
    assert len(alerts) == len(set(alerts)) == 9


def test_shipped_nagios_command_has_valid_thresholds():
    import shlex

    from tests.conftest import ROOT

    cfg = (ROOT / "examples" / "prometheus" / "kxtx-nagios.cfg").read_text()
    (line,) = [x for x in cfg.splitlines() if x.strip().startswith("command_line")]
    words = shlex.split(line)
    warn = [words[i + 1] for i, w in enumerate(words) if w == "--warn"]
    crit = [words[i + 1] for i, w in enumerate(words) if w == "--crit"]
    assert set(check.parse_thresholds(warn, "--warn")) == {"open-age", "lag"}
    assert set(check.parse_thresholds(crit, "--crit")) == {"hanging"}


def _audited(counts):
    snap = Snapshot(collected_at_ms=1_700_000_000_000, duration_s=0.5, max_timeout_ms=900_000)
    snap.markers_audited, snap.lost_markers = True, counts
    return snap


def test_lost_markers_are_exported_by_kind_and_checked_only_when_audited():
    from kxtx.ops.markers import MEANING

    counts = dict.fromkeys(MEANING, 0) | {"lost-commit-open": 2, "healed": 3}
    snap = _audited(counts)
    fams = {f.name: f for f in text_string_to_metric_families(exposition.exposition(snap, "t"))}
    got = {s.labels["kind"]: s.value for s in fams["kxtx_lost_markers"].samples}
    assert got == {k: float(v) for k, v in counts.items()}
    values = check.values_of(snap.summary())
    assert values["lost-markers"] == 2  # healed needs nothing
    status, line = check.verdict(values, {}, {})
    assert status is check.PluginStatus.CRITICAL and "lost transaction markers needing action 2" in line
    assert "lost_markers=2;;0;0;" in line
    # not asked for: no family, no metric, no default threshold
    plain = Snapshot(collected_at_ms=1_700_000_000_000, duration_s=0.5, max_timeout_ms=900_000)
    assert "kxtx_lost_markers" not in exposition.exposition(plain, "t")
    values = check.values_of(plain.summary())
    assert "lost-markers" not in values
    status, line = check.verdict(values, {}, {})
    assert status is check.PluginStatus.OK and "lost_markers" not in line


def test_an_audit_that_failed_is_unseen_and_unknown_not_zero():
    snap = _audited(None)
    snap.unseen.append({"what": "markers", "name": "lost markers", "why": "not authorized"})
    text = exposition.exposition(snap, "t")
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert fams["kxtx_lost_markers"].samples == []
    assert {s.labels["what"]: s.value for s in fams["kxtx_collect_unseen"].samples}["markers"] == 1
    values = check.values_of(snap.summary())
    status, line = check.verdict(values, {}, {})
    assert status is check.PluginStatus.UNKNOWN and "lost_markers=U" in line


def test_held_lsos_are_exported_by_why_and_absent_when_producers_were_unseen():
    from kxtx.ops import decide
    from kxtx.ops.model import HeldLso

    snap = Snapshot(collected_at_ms=1_700_000_000_000, duration_s=0.5, max_timeout_ms=900_000)
    snap.held = [
        HeldLso("t", 0, 7, 0, 5, 120_000, decide.HOLD_ABANDONED, "", "kxtx fence tid", "tid"),
        HeldLso("t", 1, 7, 0, 3, 120_000, decide.HOLD_ABANDONED, "", "kxtx fence tid", "tid"),
        HeldLso("t", 2, 8, 0, 9, 1_000, decide.HOLD_LOST_MARKER, "", "kxtx audit-markers ..."),
    ]
    fams = {f.name: f for f in text_string_to_metric_families(exposition.exposition(snap, "t"))}
    got = {s.labels["kind"]: s.value for s in fams["kxtx_lso_held_transactions"].samples}
    assert got == {
        "lost-marker": 1.0,
        "untracked": 0.0,
        "abandoned": 2.0,
        "ending": 0.0,
        "in-progress": 0.0,
        "unseen": 0.0,
    }
    snap.unseen = [{"what": "partitions", "name": "t:3", "why": "no leader"}]
    fams = {f.name: f for f in text_string_to_metric_families(exposition.exposition(snap, "t"))}
    assert "kxtx_lso_held_transactions" not in fams or not fams["kxtx_lso_held_transactions"].samples
