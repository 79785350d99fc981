"""A `kxtx pipe`'s transactional ids in executors mode, and a verdict for the pipe as a whole.

Executors mode gives every input partition a transactional id of its own, `PIPE-ID.TOPIC.PARTITION`
(`kxtx.pipe.worker.task.transactional_id`); PIPE-ID itself is never used. `inspect txn PIPE-ID` finds
those ids with ListTransactions when PIPE-ID is unknown to its coordinator.
"""

from __future__ import annotations

import string
from collections import Counter
from dataclasses import dataclass, field

from kxtx.client.admin import Cluster
from kxtx.client.model import TP
from kxtx.ops import decide
from kxtx.results import OMIT_EMPTY, Result
from kxtx.wording import plural

#: The characters Kafka allows in a topic name.
_TOPIC_CHARS = frozenset(string.ascii_letters + string.digits + "._-")

#: ASCII punctuation but "_", a word character (older RE2 releases refuse `\_`).
_PUNCTUATION = frozenset(string.punctuation) - {"_"}

#: How the ids were found (the `id_filter` field).
BROKER_FILTER = "broker: ListTransactions with a TransactionalIdPattern (Kafka 4.1+)"
CLIENT_FILTER = "client: every listed transactional id, filtered here (brokers before Kafka 4.1)"

#: The order of the kinds in a verdict, the worst first; the first two are named id by id.
_ORDER = (decide.HANGING, decide.STUCK, decide.ONGOING, decide.IDLE, decide.EXPIRED)
_NAMED = (decide.HANGING, decide.STUCK)
#: At most this many ids or partitions are named in a verdict line; the rest are counted.
_SOME = 5


def re2_literal(text: str) -> str:
    """A regular expression (RE2, as the broker's RE2/J reads it, and Python's `re`) matching
    exactly `text`. RE2 takes a backslash before any ASCII punctuation as that character, and
    refuses one before a letter or digit (where `\\d` means a class), so only punctuation but
    `_` is escaped; everything else, non-ASCII included, stands for itself."""
    return "".join(f"\\{c}" if c in _PUNCTUATION else c for c in text)


def member_pattern(pipe_id: str) -> str:
    """The TransactionalIdPattern (KIP-1152; the broker matches it against the whole id) of the
    pipe's ids. A pre-filter only: `input_of` decides, on both the broker and the client path."""
    return re2_literal(pipe_id) + r"\.[a-zA-Z0-9._-]+\.(0|[1-9][0-9]*)"


def input_of(pipe_id: str, transactional_id: str) -> TP | None:
    """The input partition whose id `transactional_id` is in pipe `pipe_id`, or None.

    Topic names may hold dots, so the partition is what follows the last one. Ambiguous by
    construction: pipe `a`'s ids include what pipe `a.b` uses for topic `t` (`a.b.t.0` is `a`'s
    for topic `b.t`); inspect asks only when `a` itself is unknown."""
    from kxtx.pipe.worker.task import transactional_id as pipe_txn_id

    prefix = f"{pipe_id}."
    if not transactional_id.startswith(prefix):
        return None
    topic, _dot, number = transactional_id[len(prefix) :].rpartition(".")
    if not topic or not set(topic) <= _TOPIC_CHARS or not (number.isascii() and number.isdigit()):
        return None
    tp = (topic, int(number))
    # the round trip through the one function that names them refuses e.g. leading zeros
    return tp if pipe_txn_id(pipe_id, *tp) == transactional_id else None


def find_members(cluster: Cluster, pipe_id: str) -> tuple[dict[str, TP], str]:
    """({id: input partition} in partition order, how they were filtered: BROKER_FILTER or
    CLIENT_FILTER). Ids the coordinators still hold, in any state (expired ones are gone)."""
    listed = cluster.list_txn_ids(member_pattern(pipe_id))
    how = BROKER_FILTER
    if listed is None:  # a broker before 4.1: list all, filter here
        listed, how = cluster.list_txn_ids(), CLIENT_FILTER
    found = {tid: tp for tid in listed or [] if (tp := input_of(pipe_id, tid)) is not None}
    return dict(sorted(found.items(), key=lambda item: item[1])), how


@dataclass(frozen=True, slots=True)
class PipeMember(Result):
    """One of a pipe's ids, a row of `inspect txn PIPE-ID`: its input partition, its state, the
    partitions of its transaction and those whose LSO it holds."""

    transactional_id: str
    input: str
    state: str
    producer_id: int | None
    producer_epoch: int | None
    partitions: list[str]
    holding_lso: list[str]
    verdict: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PipeView(Result):
    """The result of `inspect txn PIPE-ID`: a row per id, the verdict, and each id's full view
    (`details`, what `inspect txn ID` shows: a dict, whose keys depend on what the coordinator knows
    of the id and what was asked) in the order of the rows. Never without ids: an empty `details`
    is one left out (the table shows the views one by one instead)."""

    transactional_id: str
    state: str = "unknown to the coordinator"
    pipe: str
    id_filter: str
    verdict: str
    counts: dict[str, int]
    transactional_ids: list[PipeMember]
    details: list[dict] = field(default_factory=list, metadata=OMIT_EMPTY)


def pipe_view(
    pipe_id: str, members: dict[str, TP], how: str, views: list[dict], kinds: dict[str, str]
) -> PipeView:
    """The result of `inspect txn PIPE-ID` from each id's view (in the order of `views`) and its
    `decide.txn_kind`."""
    rows = [_row(members[v["transactional_id"]], v) for v in views]
    holding = {r.transactional_id: r.holding_lso for r in rows if r.holding_lso}
    counts = Counter(kinds.values())
    return PipeView(
        transactional_id=pipe_id,
        pipe=f"kxtx pipe in executors mode: a transactional id per input partition, {pipe_id}.TOPIC.PARTITION",
        id_filter=how,
        verdict=pipe_verdict(kinds, holding),
        counts={kind: counts[kind] for kind in sorted(counts, key=_rank)},
        transactional_ids=rows,
        details=views,
    )


def _row(tp: TP, view: dict) -> PipeMember:
    return PipeMember(
        transactional_id=view["transactional_id"],
        input=f"{tp[0]}:{tp[1]}",
        state=view["state"],
        producer_id=view.get("producer_id"),
        producer_epoch=view.get("producer_epoch"),
        partitions=[f"{p['topic']}:{p['partition']}" for p in view["partitions"]],
        holding_lso=[f"{p['topic']}:{p['partition']}" for p in view["partitions"] if p["blocking"]],
        verdict=view["verdict"],
    )


def pipe_verdict(kinds: dict[str, str], holding: dict[str, list[str]]) -> str:
    """One line for the pipe: how many of its ids are hanging / stuck / ongoing / idle / expired
    (naming the hanging and stuck ones), and which open transactions hold a partition's LSO.

    `kinds`: {id: `decide.txn_kind`}; `holding`: {id: partitions whose LSO its open transaction holds}."""
    counts = Counter(kinds.values())
    if set(counts) == {decide.IDLE}:
        body = "all idle, no open transaction"
    else:
        parts = []
        for kind in sorted(counts, key=_rank):
            named = sorted(t for t, k in kinds.items() if k == kind) if kind in _NAMED else []
            parts.append(f"{counts[kind]} {kind}" + (f" ({_some(named)})" if named else ""))
        body = ", ".join(parts)
    text = f"{plural(len(kinds), 'transactional id')}, one per input partition: {body}"
    if holding:
        text += "; holding an LSO: " + _some(
            [f"{t} on {', '.join(tps)}" for t, tps in sorted(holding.items())]
        )
    return text


def _rank(kind: str) -> int:
    return _ORDER.index(kind) if kind in _ORDER else len(_ORDER)


def _some(items: list[str]) -> str:
    more = len(items) - _SOME
    return ", ".join(items[:_SOME]) + (f" and {more} more" if more > 0 else "")
