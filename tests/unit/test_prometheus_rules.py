"""The shipped alert rules (examples/prometheus/kxtx-alerts.yml) through Prometheus's own promtool:
`check rules` (syntax, PromQL) and `test rules` on kxtx-alerts_test.yml, one unit test per alert with
series written for it (fires where it should, silent where it should not)."""

from __future__ import annotations

import subprocess

import pytest

from tests.binaries import need
from tests.conftest import ROOT

RULES = ROOT / "examples" / "prometheus"


def _promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([need("promtool"), *args], cwd=RULES, capture_output=True, text=True, timeout=60)


def test_promtool_check_rules():
    r = _promtool("check", "rules", "kxtx-alerts.yml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS: 9 rules found" in r.stdout + r.stderr


def test_promtool_test_rules_one_test_per_alert():
    alerts = {
        line.split(":", 1)[1].strip()
        for line in (RULES / "kxtx-alerts.yml").read_text().splitlines()
        if line.strip().startswith("- alert:")
    }
    tested = {
        line.split(":", 1)[1].strip()
        for line in (RULES / "kxtx-alerts_test.yml").read_text().splitlines()
        if line.strip().startswith("alertname:")
    }
    assert tested == alerts
    r = _promtool("test", "rules", "kxtx-alerts_test.yml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout + r.stderr


@pytest.mark.parametrize(("ci", "outcome"), [("", pytest.skip.Exception), ("1", pytest.fail.Exception)])
def test_an_absent_program_skips_except_under_ci(monkeypatch, ci, outcome):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="apt-get install prometheus-node-exporter"):
        need("prometheus-node-exporter")
