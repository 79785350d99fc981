"""Client factories (lazy imports) and the translation of client-library exceptions into KxtxError.

confluent-kafka is the data path (produce, consume, offsets); kafka-python's KafkaAdminClient serves
the KIP-664 calls librdkafka lacks (DescribeProducers, ListTransactions, DescribeTransactions,
WriteTxnMarkers).
"""

from __future__ import annotations

from kxtx.errors import (
    AuthorizationError,
    FencedError,
    KafkaOperationError,
    KxtxError,
)
from kxtx.settings import Settings

_AUTHZ_RESOURCE = {
    "TOPIC_AUTHORIZATION_FAILED": "on a Topic",
    "GROUP_AUTHORIZATION_FAILED": "on a Group",
    "CLUSTER_AUTHORIZATION_FAILED": "on the Cluster",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "on a TransactionalId",
}
_FENCED = {"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "_FENCED", "FENCED_INSTANCE_ID"}


def producer(settings: Settings, **conf):
    from confluent_kafka import Producer

    return _make(Producer, settings.confluent(**conf))


def consumer(settings: Settings, **conf):
    from confluent_kafka import Consumer

    return _make(Consumer, settings.confluent(**conf))


def admin(settings: Settings, **conf):
    from confluent_kafka.admin import AdminClient

    return _make(AdminClient, settings.confluent(**conf))


def txn_admin(settings: Settings, **kwargs):
    """kafka-python admin client for the KIP-664 calls."""
    from kafka.admin import KafkaAdminClient

    try:
        return KafkaAdminClient(**settings.kafka_python(**kwargs))
    except Exception as exc:  # noqa: BLE001 - translated
        raise translate(exc, f"connecting to {settings.bootstrap}") from exc


def _make(cls, conf: dict):
    import logging

    from confluent_kafka import KafkaException

    # librdkafka's own log lines (connection refused, retries) go to a logger the CLI shows only
    # under --debug; the failure itself reaches the user as one error message.
    conf.setdefault("logger", logging.getLogger("kxtx.librdkafka"))
    try:
        return cls(conf)
    except (KafkaException, ValueError, TypeError) as exc:
        # librdkafka names the bad property in its message ("No such configuration property: ...").
        raise KafkaOperationError(f"client configuration: {_text(exc)}") from exc


def _text(exc: BaseException) -> str:
    if exc.args and hasattr(exc.args[0], "str"):
        return exc.args[0].str()
    return str(exc) or type(exc).__name__


def error_name(exc: BaseException) -> str | None:
    """The Kafka error-code name of a confluent-kafka or kafka-python exception, if it has one."""
    err = exc.args[0] if exc.args else None
    if err is not None and hasattr(err, "name") and callable(err.name):
        return err.name()
    # kafka-python: BrokerResponseError subclasses carry `message` = the protocol error name.
    name = getattr(type(exc), "message", None)
    return name if isinstance(name, str) else None


def translate(exc: BaseException, doing: str = "") -> KxtxError:
    """Map a client exception to a KxtxError with a one-line message; already-KxtxError passes."""
    if isinstance(exc, KxtxError):
        return exc
    where = f"{doing}: " if doing else ""
    name = error_name(exc) or ""
    text = _text(exc)
    if name in _AUTHZ_RESOURCE:
        return AuthorizationError(f"{where}not authorized {_AUTHZ_RESOURCE[name]} ({name}): {text}")
    if name in _FENCED:
        return FencedError(
            f"{where}fenced: another instance with the same transactional id took over ({name})"
        )
    if type(exc).__name__ == "NoBrokersAvailable":
        return KafkaOperationError(f"{where}no broker reachable (check -b / bootstrap.servers)")
    if "Timeout" in type(exc).__name__ or name in ("_TIMED_OUT", "REQUEST_TIMED_OUT", "_TRANSPORT"):
        return KafkaOperationError(f"{where}timed out ({text}); is the cluster reachable?")
    return KafkaOperationError(f"{where}{text}")
