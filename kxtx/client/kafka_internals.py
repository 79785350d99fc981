"""The one place kxtx reaches past kafka-python's public API (tests/unit/test_import_graph.py holds it).

kafka-python's `KafkaAdminClient` has the KIP-664 calls kxtx needs, but not these, which kxtx sends
through the admin client's connection manager (`KafkaAdminClient._manager`):
- a request to a node of kxtx's choosing: WriteTxnMarkers with `transaction_result=true` (the
  public `abort_transaction` can only abort), EndTxn with a given producer id and epoch, raw Fetch;
- the leaders of partitions and the coordinator of a key, to choose that node;
- which node answers the requests kafka-python sends to "any node" (FindCoordinator, Metadata).

Written against kafka-python 3.0 (3.0.12 when last checked), the range pyproject.toml allows. Each
entry point checks once per process that the internals it uses are there, so a kafka-python that
renamed them fails with one line naming the version, not with an AttributeError deep in a call.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from kxtx.errors import KxtxError
from kxtx.log import logger

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

#: What kxtx uses, as attribute paths from a KafkaAdminClient.
USED = (
    "_manager.run",
    "_manager.send",
    "_manager.get_connection",
    "_manager.cluster.brokers",
    "_async_get_leader_for_partitions",
    "_find_coordinator_id",
)

_checked: set[type] = set()  # the admin classes already checked (held: an id() can be reused)


def check(admin: KafkaAdminClient) -> None:
    """Raise a KxtxError naming kafka-python's version if an internal kxtx uses is missing."""
    if type(admin) in _checked:
        return
    for path in USED:
        obj: Any = admin
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                import kafka

                raise KxtxError(
                    f"kafka-python {kafka.__version__} has no KafkaAdminClient.{path}, which kxtx "
                    "sends its WriteTxnMarkers, EndTxn and Fetch requests through: install the "
                    "range kxtx is tested with (pip install 'kafka-python>=3.0,<4')"
                )
    _checked.add(type(admin))


def run(admin: KafkaAdminClient, coro_fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
    """Run `coro_fn(*args)` on the admin client's I/O loop; its result (kafka-python's, untyped)."""
    check(admin)
    return admin._manager.run(coro_fn, *args)


async def send(admin: KafkaAdminClient, request: Any, node_id: int) -> Any:
    """Send a kafka-python protocol request to one node; its response."""
    return await admin._manager.send(request, node_id=node_id)


async def leaders(admin: KafkaAdminClient, tps: list[Any]) -> dict[int, list[Any]]:
    """{leader node id: [TopicPartition]} for kafka-python TopicPartitions."""
    return await admin._async_get_leader_for_partitions(tps)


async def coordinator(admin: KafkaAdminClient, key: str, key_type: Any) -> int:
    """The node id of `key`'s coordinator (kafka-python's CoordinatorType)."""
    return await admin._find_coordinator_id(key, key_type)


def prefer(admin: KafkaAdminClient, server: str) -> None:
    """Open the connection to the broker at `server` (host:port, one that just answered), so the
    requests kafka-python sends to any node go there first: it picks a connected idle node over
    one it would connect to, and drawn at random a frozen broker (SIGSTOP, a long GC pause: it
    accepts, never answers) held FindCoordinator for the whole --timeout. Best effort."""
    check(admin)
    manager = admin._manager
    host, _, port = server.rpartition(":")
    node = next(
        (b.node_id for b in manager.cluster.brokers() if (b.host, str(b.port)) == (host, port)),
        None,
    )
    if node is None:  # advertised under another name than the one bootstrapped from
        return

    async def connect() -> None:
        await manager.get_connection(node)

    try:
        manager.run(connect)
    except Exception as exc:  # noqa: BLE001 - only a preference; the request finds a node anyway
        logger.debug(f"connecting to {server} ahead of the first request: {exc}")


def batch_records(raw: Any) -> tuple[bytes, int] | None:
    """A kafka-python DefaultRecordBatch (format v2), decompressed by kafka-python: its buffer and
    where its records start, for kxtx's own record loop (kxtx.records.batchrecords); None for
    other batch kinds, or a kafka-python whose batch keeps them elsewhere (its iterator then)."""
    uncompress = getattr(raw, "_maybe_uncompress", None)
    if uncompress is None or not hasattr(raw, "_buffer") or getattr(raw, "magic", 2) != 2:
        return None
    uncompress()
    return bytes(raw._buffer), raw._pos
