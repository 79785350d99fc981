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


def _features(settings: Settings) -> dict:
    kp = clients.txn_admin(settings)
    try:
        features = clients.ride_out(kp.describe_features, "DescribeFeatures", settings.timeout)
    finally:
        kp.close()
    # kafka-python returns {name: {"supported": (lo, hi), "finalized": (lo, hi), ...}}.
    finalized = {
        k: v["finalized"][1] for k, v in features.items() if isinstance(v, dict) and v.get("finalized")
    }
    return {
        "metadata_version_level": finalized.get("metadata.version"),
        "transaction_version": finalized.get("transaction.version", 0),
        "group_version": finalized.get("group.version", 0),
    }
