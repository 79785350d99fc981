"""`kxtx cluster`'s feature levels from kafka-python's describe_features answer (issue 63, item 8)."""

from __future__ import annotations

import pytest

from kxtx.ops.clusterinfo import METADATA_VERSIONS, level


@pytest.mark.parametrize(
    ("features", "expected"),
    [
        ({}, None),  # a 3.x broker: no transaction.version at all
        ({"transaction.version": {"supported": (0, 2)}}, 0),  # supported, level 0 (not finalized)
        ({"transaction.version": {"supported": (0, 2), "finalized": (2, 2)}}, 2),
        ({"transaction.version": {"finalized": (1, 1)}}, 1),
    ],
)
def test_level(features, expected):
    assert level(features, "transaction.version") == expected


def test_metadata_version_names():
    assert METADATA_VERSIONS[21] == "3.9-IV0" and METADATA_VERSIONS[4] == "3.3-IV0"
    assert sorted(METADATA_VERSIONS) == list(range(4, 34))
