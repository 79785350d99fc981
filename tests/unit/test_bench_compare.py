"""bench/compare.py's pure parts: which numbers it takes from a benchmark's JSON lines, and the ratios."""

import importlib.util

import pytest

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("bench_compare", ROOT / "bench" / "compare.py")
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)


@pytest.mark.parametrize(
    "line,expected",
    [
        ('{"case": "plain", "a": 10, "b": 20.5, "c": null}', {"plain.a": 10.0, "plain.b": 20.5}),
        (
            '{"repeat": 0, "d_exec": {"records_per_s": 5, "cpu_s": {"jvm": 1.5, "py": 2}, "busy_cores": {"all": 1}}}',
            {"d_exec.records_per_s": 5.0, "d_exec.cpu_s_total": 3.5},
        ),
        ('{"case": "keyed", "ok": true, "runs": {"a": [1, 2]}}', {}),
        ("not json", {}),
        ("[1, 2]", {}),
    ],
)
def test_figures(line, expected):
    assert compare.figures(line) == expected


def test_report_ratios_per_round():
    ref = [{"x.rate": 100.0, "only_ref": 1.0}, {"x.rate": 200.0}]
    new = [{"x.rate": 110.0}, {"x.rate": 180.0, "only_new": 1.0}]
    header, row = compare.report(ref, new)
    assert header.startswith("figure")
    name, median, low, high, *_ = row.split()
    assert (name, float(median), float(low), float(high)) == ("x.rate", 1.0, 0.9, 1.1)
