"""`kxtx cluster`'s feature levels (issue 63, item 8): a feature the brokers do not have (transaction
and group versions before Kafka 4.0) is null / "not supported", not level 0, and metadata.version
is named. Versioned: CI runs it on Kafka 3.9 too."""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.kafka, pytest.mark.versioned]


def test_feature_levels_match_the_brokers_version(kafka, run_kxtx):
    doc = run_kxtx("cluster", "-o", "json", expect=0).json
    release = kafka.version or ""
    if kafka.major >= 4:
        assert isinstance(doc["transaction_version"], int) and isinstance(doc["group_version"], int), doc
    else:
        assert doc["transaction_version"] is None and doc["group_version"] is None, doc
        table = run_kxtx("cluster", "-o", "table", expect=0, env={"COLUMNS": "120"}).stdout
        assert re.search(r"transaction_version\s+.*not supported", table), table
        assert re.search(r"group_version\s+.*not supported", table), table
    assert doc.get("metadata_version") is not None, doc
    assert re.fullmatch(r"\d+\.\d+-IV\d+", doc["metadata_version"]), doc
    if release:  # the cluster runs at its release's own level, as a new sandbox does
        assert doc["metadata_version"].split("-")[0] == ".".join(release.split(".")[:2]), doc
