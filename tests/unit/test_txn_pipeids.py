"""A pipe's executors-mode transactional ids (`PIPE-ID.TOPIC.PARTITION`) for `inspect txn`: the
broker's pattern, the parse, and the pipe's verdict (no broker)."""

from __future__ import annotations

import re

import pytest

from kxtx.ops import decide, pipeids
from kxtx.pipe.worker.task import transactional_id


@pytest.mark.parametrize(
    "text, literal",
    [
        ("kxtx-pipe-g-1a2b", r"kxtx\-pipe\-g\-1a2b"),
        ("a.b", r"a\.b"),
        ("x+(y)*[z]{2}?|^$", r"x\+\(y\)\*\[z\]\{2\}\?\|\^\$"),
        (r"back\slash", r"back\\slash"),
        ("under_score 9", "under_score 9"),  # \_ and "\ " are not needed; \9 would be a backreference
        ("día·π", "día·π"),  # non-ASCII stands for itself
    ],
)
def test_re2_literal(text, literal):
    assert pipeids.re2_literal(text) == literal
    assert re.fullmatch(literal, text)


@pytest.mark.parametrize(
    "pipe_id, tid, tp",
    [
        ("p", "p.t.0", ("t", 0)),
        ("p", "p.orders-eu.12", ("orders-eu", 12)),
        ("p", "p.a.b.3", ("a.b", 3)),  # topics may hold dots: the partition follows the last one
        ("p.q", "p.q.t.1", ("t", 1)),
        ("a+(b)", "a+(b).t.7", ("t", 7)),
        ("π", "π.t_x.0", ("t_x", 0)),
        ("p", "p", None),
        ("p", "p.t", None),  # no partition
        ("p", "p..0", None),  # no topic
        ("p", "p.t.01", None),  # never written so: leading zero
        ("p", "p.t.-1", None),
        ("p", "p.t.²", None),  # a digit, not an ASCII one
        ("p", "p.t x.0", None),  # a space is no topic character
        ("p", "pq.t.0", None),
        ("p.q", "p-q.t.0", None),  # an unescaped "." would take it
        ("a+(b)", "aa(b).t.7", None),
        ("p", "p.t.0.", None),
    ],
)
def test_input_of_and_the_pattern_agree(pipe_id, tid, tp):
    assert pipeids.input_of(pipe_id, tid) == tp
    # The broker's filter (RE2/J, whole-id match) keeps what the parse takes, and only that.
    assert (re.fullmatch(pipeids.member_pattern(pipe_id), tid) is not None) == (tp is not None)
    if tp is not None:
        assert transactional_id(pipe_id, *tp) == tid


IDLE, ONGOING, HANG, STUCK, GONE = decide.IDLE, decide.ONGOING, decide.HANGING, decide.STUCK, decide.EXPIRED
HEAD = "transactional ids, one per input partition: "


@pytest.mark.parametrize(
    "kinds, holding, verdict",
    [
        ({"p.t.0": IDLE}, {}, "1 transactional id, one per input partition: all idle, no open transaction"),
        ({"p.t.0": IDLE, "p.t.1": IDLE}, {}, f"2 {HEAD}all idle, no open transaction"),
        (
            {"p.t.0": IDLE, "p.t.1": ONGOING},
            {"p.t.1": ["o:0", "o:1"]},
            f"2 {HEAD}1 ongoing, 1 idle; holding an LSO: p.t.1 on o:0, o:1",
        ),
        (
            {"p.t.0": IDLE, "p.t.1": HANG, "p.t.2": ONGOING, "p.t.3": STUCK, "p.t.4": GONE},
            {"p.t.1": ["o:0"]},
            f"5 {HEAD}1 hanging (p.t.1), 1 stuck past its timeout (p.t.3), 1 ongoing, 1 idle, 1 expired; "
            "holding an LSO: p.t.1 on o:0",
        ),
        ({"p.t.0": "Weird", "p.t.1": IDLE}, {}, f"2 {HEAD}1 idle, 1 Weird"),  # unknown states last
        (
            {f"p.t.{i}": HANG for i in range(7)},
            {f"p.t.{i}": [f"o:{i}"] for i in range(7)},
            f"7 {HEAD}7 hanging (p.t.0, p.t.1, p.t.2, p.t.3, p.t.4 and 2 more); holding an LSO: "
            "p.t.0 on o:0, p.t.1 on o:1, p.t.2 on o:2, p.t.3 on o:3, p.t.4 on o:4 and 2 more",
        ),
    ],
)
def test_pipe_verdict(kinds, holding, verdict):
    assert pipeids.pipe_verdict(kinds, holding) == verdict


def _view(tid, state, verdict, parts):
    return {
        "transactional_id": tid,
        "verdict": verdict,
        "state": state,
        "producer_id": 5,
        "producer_epoch": 2,
        "partitions": [{"topic": t, "partition": p, "blocking": b} for t, p, b in parts],
    }


def test_pipe_view_rows_and_counts():
    members = {"p.t.0": ("t", 0), "p.t.1": ("t", 1)}
    views = [
        _view("p.t.0", "CompleteCommit", "idle (last transaction: CompleteCommit)", [("o", 0, False)]),
        _view("p.t.1", "Ongoing", "ongoing for 2s (timeout 1m00s)", [("o", 0, False), ("o", 1, True)]),
    ]
    out = pipeids.pipe_view("p", members, pipeids.CLIENT_FILTER, views, {"p.t.0": IDLE, "p.t.1": ONGOING})
    assert out.transactional_id == "p" and out.id_filter == pipeids.CLIENT_FILTER
    assert out.counts == {"ongoing": 1, "idle": 1} and list(out.counts) == ["ongoing", "idle"]
    assert out.verdict == f"2 {HEAD}1 ongoing, 1 idle; holding an LSO: p.t.1 on o:1"
    assert out.to_dict()["transactional_ids"] == [
        {
            "transactional_id": "p.t.0",
            "input": "t:0",
            "state": "CompleteCommit",
            "producer_id": 5,
            "producer_epoch": 2,
            "partitions": ["o:0"],
            "holding_lso": [],
            "verdict": "idle (last transaction: CompleteCommit)",
        },
        {
            "transactional_id": "p.t.1",
            "input": "t:1",
            "state": "Ongoing",
            "producer_id": 5,
            "producer_epoch": 2,
            "partitions": ["o:0", "o:1"],
            "holding_lso": ["o:1"],
            "verdict": "ongoing for 2s (timeout 1m00s)",
        },
    ]
    assert out.details == views
