"""Client factories (lazy imports) and the translation of client-library exceptions into KxtxError.

confluent-kafka is the data path (produce, consume, offsets); kafka-python's KafkaAdminClient serves
the KIP-664 calls librdkafka lacks (DescribeProducers, ListTransactions, DescribeTransactions,
WriteTxnMarkers).
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, TypeVar

from kxtx.client.kafkaerrors import ASK_AGAIN, SILENT, UNAVAILABLE, Kind, backoff, classify
from kxtx.client.settings import Settings, error_text
from kxtx.errors import (
    FencedError,
    KafkaOperationError,
    KxtxError,
    Unavailable,
    Unreachable,
)
from kxtx.log import logger

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from confluent_kafka import Consumer, KafkaError, Producer
    from confluent_kafka.admin import AdminClient, ClusterMetadata
    from kafka.admin import KafkaAdminClient

    from kxtx.client.authz import Need

T = TypeVar("T")


def ride_out(
    call: Callable[[], T],
    doing: str,
    bound: float,
    need: Need | Iterable[Need] | None = None,
    renew: Callable[[], None] | None = None,
) -> T:
    """`call()`, asked again while it fails with an error a later try can get past (the kinds of
    `kafkaerrors.ASK_AGAIN`: a leader or coordinator moving, loading or coming back, a broker
    down, no answer; not a missing topic, the user's to fix) for up to `bound` seconds (the
    command's --timeout); any other error at once, and the last one past the bound, leave
    translated (`translate`: a failover is `Unavailable`, exit 75). No answer past the bound is
    `Unavailable` too: the cluster answered when the client was made (`reach`), so it is a broker
    the call needs (a partition's leader, a coordinator) that is down or stalled, not a wrong
    address.
    `renew()` runs before each new try: a client that caches where coordinators and leaders are
    (kafka-python's admin client keeps asking a coordinator that moved) is made anew."""
    deadline = time.monotonic() + bound
    attempt = 0
    while True:
        try:
            return call()
        except KxtxError:
            raise
        except Exception as exc:
            left = deadline - time.monotonic()
            kind = classify(exc)
            if kind is Kind.NO_ANSWER and left <= 0:
                from kxtx.client.properties import scrub

                raise Unavailable(
                    f"{doing}: no answer in {bound:g}s ({scrub(error_text(exc))}); a broker it needs is "
                    "down or failing over: run the same command again"
                ) from exc
            if kind not in ASK_AGAIN or left <= 0:
                raise translate(exc, doing, need) from exc
            logger.info("%s: %s; asking again", doing, error_text(exc))
            time.sleep(min(left, backoff(attempt)))
            attempt += 1
            if renew is not None:
                renew()


def producer(settings: Settings, **conf: object) -> Producer:
    from confluent_kafka import Producer

    reach(settings)
    return _make(Producer, settings.confluent(**conf), settings)


def consumer(settings: Settings, **conf: object) -> Consumer:
    from confluent_kafka import Consumer

    reach(settings)
    return _make(Consumer, settings.confluent(**conf), settings)


def admin(settings: Settings, **conf: object) -> AdminClient:
    from confluent_kafka.admin import AdminClient

    reach(settings)
    return _make(AdminClient, settings.confluent(**conf), settings)


def probing_admin(settings: Settings) -> AdminClient:
    """An admin client for `settings`, connected: the one that checks the cluster is reachable
    (`reach`) when nothing has yet, so its first request finds a connection (a new client waits
    ~20-50 ms for its first answer; bench/README.md, "The fixed cost trimmed")."""
    probe = reach(settings)  # None when the cluster was reached before
    # (`is None`, not `or`: a client with nothing queued is falsy, its len() being 0)
    return admin(settings) if probe is None else probe


def txn_admin(settings: Settings, **kwargs: object) -> KafkaAdminClient:
    """kafka-python admin client for the KIP-664 calls."""
    from kafka.admin import KafkaAdminClient

    from kxtx.client import kafka_internals
    from kxtx.client.properties import remember_secrets

    reach(settings)
    remember_secrets(settings.props)
    _note_protocol(settings.props)
    _note_bootstrap(settings.props)
    servers = settings.bootstrap.split(",")
    if len(servers) == 1:
        try:
            client = KafkaAdminClient(**settings.kafka_python(**kwargs))
        except Exception as exc:
            raise translate(exc, f"connecting to {settings.bootstrap}") from exc
        kafka_internals.prefer(client, servers[0])
        return client
    # kafka-python bootstraps from one server at random and gives its connection the whole
    # bootstrap timeout: a frozen broker (SIGSTOP, a long GC pause: it accepts, never answers)
    # drawn first failed the command with "no broker reachable" while the others answered. So
    # each server in turn, with its share of --timeout (at least BOOTSTRAP_TRY_S).
    share = max(BOOTSTRAP_TRY_S, settings.timeout / len(servers))
    last: Exception | None = None
    for server in servers:
        try:
            overrides = {"bootstrap_timeout_ms": int(share * 1000), **kwargs, "bootstrap_servers": [server]}
            client = KafkaAdminClient(**settings.kafka_python(**overrides))
        except Exception as exc:  # the next server, unless it was not silence
            if not unreachable(exc):
                raise translate(exc, f"connecting to {server}") from exc
            logger.debug(f"bootstrapping kafka-python from {server}: {exc}")
            last = exc
            continue
        # the requests kafka-python sends to any node (FindCoordinator) go to the one that answered
        kafka_internals.prefer(client, server)
        return client
    assert last is not None
    raise translate(last, f"connecting to {settings.bootstrap}") from last


#: The least time kafka-python's bootstrap gets from one server of several (a TLS or SASL login on
#: a loaded machine takes well under it).
BOOTSTRAP_TRY_S = 2.0


#: How long every bootstrap broker may stay unreachable (refused, unresolvable) before a command
#: gives up, when --timeout is longer: a broker that is down does not come back within one command.
ALL_DOWN_GRACE_S = 1.0

#: The bootstrap lists that answered in this process (each is probed once).
_reached: set[str] = set()


#: "(after 3ms in state SSL_HANDSHAKE, 1 identical error(s) suppressed)" in librdkafka's messages
_STATE = re.compile(r"\bin state ([A-Z_]+)")
#: "FAIL [rdkafka#producer-1] [thrd:127.0.0.1:9092/bootstrap]: " before a log line's text
_LOG_PREFIX = re.compile(r"^\S+ \[[^\]]*\] \[[^\]]*\]: ")


class BrokerErrors:
    """A client's error_cb: remembers since when every bootstrap broker is unreachable, and why."""

    def __init__(self) -> None:
        self.all_down_since: float | None = None
        self.reason = ""
        #: a broker refused the login or the TLS handshake: it answered, the settings are wrong
        self.refused: KafkaError | None = None
        #: a log line saying a broker closed a connection it had accepted
        self.closed: str | None = None

    def __call__(self, err: KafkaError) -> None:
        if err.name() == "_ALL_BROKERS_DOWN":
            if self.all_down_since is None:
                self.all_down_since = time.monotonic()
        else:
            self.reason = err.str()
            # librdkafka names the connection state a failure happened in: past CONNECT (TLS
            # handshake, login, API versions) the broker was there and refused this client.
            if classify(err) is Kind.AUTH or err.name() == "_SSL" or _late(self.reason):
                self.refused = err

    def logged(self, text: str) -> None:
        """A librdkafka log line: a connection the broker closed after accepting it (a plaintext
        client at a TLS listener) reaches only the log, not error_cb."""
        if self.closed is None and _late(text):
            self.closed = _LOG_PREFIX.sub("", text)


def _late(text: str) -> bool:
    """librdkafka names the connection state a failure happened in: past CONNECT (TLS handshake,
    login, API versions) the broker was there and refused this client."""
    state = _STATE.search(text)
    # a request that timed out there is silence, not a refusal (a blackholed broker)
    return state is not None and state.group(1) != "CONNECT" and "timed out" not in text.lower()


class _LogTap(logging.Handler):
    """The probe's librdkafka log: noted for BrokerErrors, passed on to kxtx.librdkafka (--debug)."""

    def __init__(self, errors: BrokerErrors) -> None:
        super().__init__()
        self.errors = errors

    def emit(self, record: logging.LogRecord) -> None:
        self.errors.logged(record.getMessage())
        target = logging.getLogger("kxtx.librdkafka")
        if target.isEnabledFor(record.levelno):
            target.handle(record)


def reach(settings: Settings, again: bool = False) -> AdminClient | None:
    """Raise `Unreachable` (exit 69) when no bootstrap broker answers: within a few seconds when
    every address refuses or does not resolve (librdkafka then reports all brokers down), within
    --timeout when one is silent. Once per process and bootstrap list, before its first client:
    without it every command waited its whole --timeout for a refused port and exited 1, so a cron
    script could not tell a down cluster from a bad argument. `again`: ask even when reached before
    (`monitor serve` before each collection: a cluster that went down since costs a second, not
    every call's timeout). Returns the admin client that asked (None when it did not ask): left
    unused, it is destroyed with its connection."""
    from confluent_kafka.admin import AdminClient

    if settings.bootstrap in _reached and not again:
        return None
    errors = BrokerErrors()
    # A logger of its own, outside kxtx's tree (whose handler would print what it is given) and
    # outside the logging module's registry (the client may live on: `probing_admin`).
    log = logging.Logger("kxtx-probe.librdkafka", logging.DEBUG)
    log.propagate = False
    log.addHandler(_LogTap(errors))
    probe = _make(AdminClient, settings.confluent(error_cb=errors, logger=log), settings)
    metadata(probe, settings, errors)
    _reached.add(settings.bootstrap)
    return probe


def metadata(
    admin: AdminClient, settings: Settings, errors: BrokerErrors, topic: str | None = None
) -> ClusterMetadata:
    """`admin.list_topics`, giving up early when `errors` (the client's error_cb) says every
    bootstrap broker has been unreachable for ALL_DOWN_GRACE_S."""
    from confluent_kafka import KafkaException

    where = f"connecting to {settings.bootstrap}"
    deadline = time.monotonic() + settings.timeout
    while True:
        try:
            return admin.list_topics(topic, timeout=max(0.1, min(1.0, deadline - time.monotonic())))
        except KafkaException as exc:
            admin.poll(0)  # serves error_cb
            now = time.monotonic()
            down = errors.all_down_since
            if errors.refused is not None:
                raise _refused(errors.refused, where) from None
            if down is not None and errors.closed is not None:
                raise _closed(errors.closed, where) from None
            if down is not None and now - down >= min(ALL_DOWN_GRACE_S, settings.timeout):
                why = f" ({errors.reason})" if errors.reason else ""
                raise Unreachable(
                    f"{where}: no broker reachable{why}; check -b / bootstrap.servers{_security_hint()}"
                ) from None
            if now >= deadline:
                if unreachable(exc):
                    raise Unreachable(
                        f"{where}: no answer within {settings.timeout:g} s ({error_text(exc)}); is the "
                        f"cluster reachable?{_security_hint()}"
                    ) from None
                raise translate(exc, where) from exc
        except Exception as exc:
            raise translate(exc, where) from exc


def _refused(err: KafkaError, where: str) -> KxtxError:
    """A broker took the connection and then refused this client: wrong credentials, certificate or
    security.protocol (exit 1: the settings are wrong, the cluster is there)."""
    from confluent_kafka import KafkaException

    if classify(err) is Kind.AUTH or err.name() == "_SSL":
        return translate(KafkaException(err), where)
    return _closed(err.str(), where)


def _closed(detail: str, where: str) -> KxtxError:
    """The broker closed the connection after accepting it (`detail`: what the client said)."""
    settings = _security_settings() or "security.protocol"
    return KafkaOperationError(
        f"{where}: the broker ended the connection ({detail}); the login or TLS handshake may "
        f"have failed: check {settings}"
    )


def _make(cls: Callable[..., T], conf: dict, settings: Settings) -> T:
    import logging

    from kxtx.client.properties import remember_secrets, scrub

    remember_secrets(conf)
    _note_protocol(conf)
    _note_bootstrap(conf)

    from confluent_kafka import KafkaException

    # librdkafka's own log lines (connection refused, retries) go to a logger the CLI shows only
    # under --debug; the failure itself reaches the user as one error message.
    conf.setdefault("logger", logging.getLogger("kxtx.librdkafka"))
    # A producer's (and admin client's) metadata request for a topic it does not know asks the
    # broker to create it (librdkafka's default for producers; brokers default to
    # auto.create.topics.enable=true): a check for a missing topic, or a topic handle made for one,
    # would create it with the broker's defaults. kxtx never creates a topic as a side effect.
    conf["allow.auto.create.topics"] = False
    try:
        return cls(conf)
    except (KafkaException, ValueError, TypeError) as exc:
        # librdkafka names the bad property in its message ("No such configuration property: ..."),
        # but its own way: the settings name the one the user gave, and where
        mine = settings.client_config_error(error_text(exc), conf)
        if mine is not None:
            raise mine from None
        raise KafkaOperationError(f"client configuration: {scrub(error_text(exc))}") from exc


def error_name(exc: BaseException) -> str | None:
    """The Kafka error-code name of a confluent-kafka or kafka-python exception, if it has one."""
    err = exc.args[0] if exc.args else None
    if err is not None and hasattr(err, "name") and callable(err.name):
        return err.name()
    # kafka-python: BrokerResponseError subclasses carry `message` = the protocol error name.
    name = getattr(type(exc), "message", None)
    return name if isinstance(name, str) else None


def translate(exc: BaseException, doing: str = "", need: Need | Iterable[Need] | None = None) -> KxtxError:
    """Map a client exception to a KxtxError with a one-line message; already-KxtxError passes.

    Authorization errors name the missing operation and resource: pass `need` (a `kxtx.client.authz.Need`
    or several) when the caller knows it, else it is inferred from `doing` (see `kxtx.client.authz`).
    Remembered secrets are blanked out of the message."""
    from kxtx.client import authz
    from kxtx.client.properties import scrub

    if isinstance(exc, KxtxError):
        return exc
    where = f"{doing}: " if doing else ""
    name = error_name(exc) or ""
    kind = classify(exc)
    text = scrub(error_text(exc))
    if name in authz.AUTHZ_ERRORS:
        needs = [need] if isinstance(need, authz.Need) else list(need or [])
        return authz.explain(name, doing, needs, text)
    if kind is Kind.FENCED:
        return FencedError(
            f"{where}fenced: another instance with the same transactional id took over ({name})"
        )
    if name == "FENCED_INSTANCE_ID":  # KIP-345 static membership
        return FencedError(
            f"{where}fenced: another consumer with the same group.instance.id joined the group ({name})"
        )
    if kind is Kind.AUTH or "Authentication" in type(exc).__name__:
        return KafkaOperationError(
            f"{where}authentication failed ({text}); check sasl.mechanism, sasl.username and "
            "sasl.password (or the client certificate)"
        )
    if name == "_SSL":
        return KafkaOperationError(
            f"{where}TLS handshake failed ({text}); check ssl.ca.location "
            "(the CA that signed the broker certificate) and the client certificate"
        )
    if kind in UNAVAILABLE:
        return Unavailable(
            f"{where}{text}; the cluster is failing over or short of brokers: run the "
            "same command again to continue"
        )
    if type(exc).__name__ == "NoBrokersAvailable" or "Unable to bootstrap" in text:
        return KafkaOperationError(
            f"{where}no broker reachable{_at(where)} (check -b / bootstrap.servers){_security_hint()}"
        )
    if unreachable(exc):
        return KafkaOperationError(
            f"{where}timed out ({text}); is the cluster{_at(where)} reachable?{_security_hint()}"
        )
    return KafkaOperationError(f"{where}{text}")


def unreachable(exc: BaseException) -> bool:
    """True when `exc` says the cluster did not answer in time (retrying would wait as long again):
    by its name's kind (`kafkaerrors.SILENT`; kafka-python's local errors have no name), or a
    timeout or no-broker exception of either library."""
    return (
        "Timeout" in type(exc).__name__
        or type(exc).__name__ == "NoBrokersAvailable"
        or classify(error_name(exc)) in SILENT
    )


#: The bootstrap servers of the clients this process made: a connection error names the address it
#: tried (a wrong -b or KXTX_BOOTSTRAP_SERVERS is the usual cause).
_bootstraps: list[str] = []


def _note_bootstrap(props: dict) -> None:
    value = str(props.get("bootstrap.servers", ""))
    if value and value not in _bootstraps:
        _bootstraps.append(value)


def _at(where: str) -> str:
    addresses = [b for b in _bootstraps if b not in where]
    return f" at {', '.join(addresses)}" if addresses and len(addresses) == len(_bootstraps) else ""


#: The security.protocol of the clients this process made (librdkafka reports a failed SASL login or
#: TLS handshake only in its log, and the call then just times out).
_protocols: set[str] = set()


def _note_protocol(props: dict) -> None:
    _protocols.add(str(props.get("security.protocol", "PLAINTEXT")).upper())


def security_hint() -> str:
    """A sentence pointing at the login/TLS settings in use, for a cluster that did not answer."""
    return _security_hint()


def _security_settings() -> str:
    """The login and TLS settings of the security protocols in use ('' for PLAINTEXT)."""
    hints = []
    if any(p.startswith("SASL") for p in _protocols):
        hints.append("sasl.mechanism, sasl.username and sasl.password")
    if any(p.endswith("SSL") for p in _protocols):
        hints.append("ssl.ca.location and the client certificate")
    return " and ".join(hints)


def _security_hint() -> str:
    hints = _security_settings()
    return f" If it is, the login or TLS handshake may have failed: check {hints}" if hints else ""
