"""The checkpoint's record of the mapping (issue 63, item 4): a changed format, key or value
mapping is refused when a file would continue; a checkpoint without one (written before) is not."""

from __future__ import annotations

import json

import pytest

from kxtx.errors import UsageError
from kxtx.produce import checkpoint as cpmod

PATH = "/data/orders.txt"


def _cp(mapping: dict | None) -> cpmod.Checkpoint:
    pos = cpmod.FilePosition(cpmod.FileIdentity(PATH, 10, 10, "x"), offset=10, line=3, eof=True)
    return cpmod.Checkpoint("tx", "orders", {PATH: pos}, 3, 1, 0, mapping)


LINES = cpmod.mapping_of({PATH: "lines"}, None, None, False)


@pytest.mark.parametrize(
    ("now", "said"),
    [
        (cpmod.mapping_of({PATH: "csv"}, None, None, False), "-I lines, now -I csv"),
        (cpmod.mapping_of({PATH: "lines"}, "id", None, False), "no -k, now -k id"),
        (cpmod.mapping_of({PATH: "lines"}, None, "v", False), "no --value-field, now --value-field v"),
        (cpmod.mapping_of({PATH: "lines"}, None, None, True), "no --value-as-json, now --value-as-json"),
    ],
)
def test_a_changed_mapping_is_refused(now, said):
    with pytest.raises(UsageError, match="another mapping") as exc:
        cpmod.check_mapping(_cp(LINES), now)
    assert said in str(exc.value) and "--restart" in str(exc.value)


def test_the_same_mapping_other_files_and_old_checkpoints_pass():
    cpmod.check_mapping(_cp(LINES), LINES)
    cpmod.check_mapping(_cp(LINES), cpmod.mapping_of({"/data/new.csv": "csv"}, "id", None, False))
    cpmod.check_mapping(_cp(None), cpmod.mapping_of({PATH: "csv"}, "id", None, False))


def test_a_checkpoint_written_before_reads_with_no_mapping_and_keeps_its_id():
    doc = json.loads(_cp(None).to_bytes())
    del doc["mapping"]  # as an earlier kxtx wrote it
    cp = cpmod.Checkpoint.from_bytes(json.dumps(doc).encode(), "here")
    assert cp.mapping is None and cp.files[PATH].line == 3
    cpmod.with_mapping(cp, LINES)
    assert cpmod.Checkpoint.from_bytes(cp.to_bytes(), "here").mapping == LINES
    # the transactional id still comes from the topic and paths alone: the one earlier runs used
    assert cpmod.default_transactional_id("orders", [PATH]) == "kxtx-produce-orders-65d0728d6b1b"
