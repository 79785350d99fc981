"""What `kxtx pipe` checks before Spark starts: the cluster answers, the topics exist.

A JVM start takes seconds; a wrong bootstrap address or a misspelt topic should not wait for it.
Topics are looked up in a full metadata listing by an admin client that may not auto-create (a
request naming a missing topic would create it on a broker with auto.create.topics.enable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kxtx.client import clients
from kxtx.errors import NoSuchTopic
from kxtx.log import logger
from kxtx.pipe.runconfig import INTERNAL_TOPICS, matches

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient, ClusterMetadata

    from kxtx.client.settings import Settings


def check(settings: Settings, inputs: list[str], outputs: dict[str, str]) -> None:
    """Raise unless the cluster answers and every named input and output topic exists.

    `outputs` maps topic -> what it is ("output topic", "dead-letter topic"). Input patterns
    (^regex) may match nothing yet (topics created later join the subscription): a warning."""
    admin = clients.admin(settings, error_cb=(errors := clients.BrokerErrors()))
    md = clients.metadata(admin, settings, errors)
    for topic in dict.fromkeys(inputs):
        if topic.startswith("^"):
            if not any(matches(topic, t) for t in md.topics if t not in INTERNAL_TOPICS):
                logger.warning("no topic matches --in %s yet; waiting for one to be created", topic)
            continue
        _require(admin, settings, md, topic, "input topic", "READ")
    for topic, what in outputs.items():
        _require(admin, settings, md, topic, what, "WRITE")


def _require(
    admin: AdminClient, settings: Settings, md: ClusterMetadata, topic: str, what: str, operation: str
) -> None:
    t = md.topics.get(topic)
    if t is not None and t.error is None:
        return
    _hidden_by_acl(admin, settings, topic, what, operation)
    raise NoSuchTopic(topic)


def _hidden_by_acl(admin: AdminClient, settings: Settings, topic: str, what: str, operation: str) -> None:
    """A topic the principal may not DESCRIBE is left out of the full listing: ask for it by name
    (safe: this client may not auto-create) and name the missing permission."""
    from kxtx.client.authz import Need, explain

    try:
        t = admin.list_topics(topic, timeout=settings.timeout).topics.get(topic)
    except Exception:  # noqa: BLE001 - then "does not exist" stands
        return
    if t is not None and t.error is not None and t.error.name() == "TOPIC_AUTHORIZATION_FAILED":
        raise explain(
            t.error.name(),
            f"{what} {topic!r}",
            [Need("DESCRIBE", "Topic", topic), Need(operation, "Topic", topic)],
        )
