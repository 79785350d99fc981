"""What a cluster offers for transactions: brokers, controller, and the finalized feature levels.

`transaction.version` >= 2 means KIP-890 "transactions v2" (server-side defence, producer-id rotation
on every commit), which changes what `__transaction_state` records look like and how hangs arise.
"""

from __future__ import annotations

from kxtx.client import clients
from kxtx.client.settings import Settings


def describe(settings: Settings) -> dict:
    admin = clients.admin(settings)
    t = settings.timeout
    md = clients.ride_out(lambda: admin.list_topics(timeout=t), f"reaching {settings.bootstrap}", t)
    result = {
        "bootstrap": settings.bootstrap,
        "cluster_id": md.cluster_id,
        "controller_id": md.controller_id,
        "brokers": [{"id": b.id, "host": b.host, "port": b.port} for b in md.brokers.values()],
        "topics": len(md.topics),
    }
    result.update(_features(settings))
    return result


#: The finalized `metadata.version` level -> its name, as Kafka's MetadataVersion enum has them
#: (read from the 3.9.2 and 4.4.0 jars: server-common's MetadataVersion.VERSIONS; 3.3-IV0, level 4,
#: is the first a KRaft cluster can be bootstrapped at). A level not listed shows no name.
METADATA_VERSIONS = {
    4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3", 8: "3.4-IV0",
    9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2",
    15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4",
    20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3",
    26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0",
    31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2",
}  # fmt: skip

#: The features whose level `describe` reports: None where the brokers do not have the feature
#: (transaction.version and group.version came with Kafka 4.0), not 0, which is a level.
FEATURES = ("transaction_version", "group_version")


def _features(settings: Settings) -> dict:
    kp = clients.txn_admin(settings)
    try:
        features = clients.ride_out(kp.describe_features, "DescribeFeatures", settings.timeout)
    finally:
        kp.close()
    metadata = level(features, "metadata.version")
    return {
        "metadata_version_level": metadata,
        "metadata_version": METADATA_VERSIONS.get(metadata) if metadata is not None else None,
        "transaction_version": level(features, "transaction.version"),
        "group_version": level(features, "group.version"),
    }


def level(features: dict, name: str) -> int | None:
    """A feature's finalized level from kafka-python's `describe_features` ({name: {"supported":
    (lo, hi), "finalized": (lo, hi)}}): 0 when the brokers support it but none is finalized (level
    0 is not listed as finalized), None when they do not have the feature at all."""
    entry = features.get(name)
    if not isinstance(entry, dict) or not (entry.get("supported") or entry.get("finalized")):
        return None
    finalized = entry.get("finalized")
    return finalized[1] if finalized else 0
