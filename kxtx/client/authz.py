"""Authorization failures that explain themselves: which operation on which resource is missing.

Kafka answers a missing ACL with one of four error codes that name only the resource *type*
(TOPIC_/GROUP_/TRANSACTIONAL_ID_/CLUSTER_AUTHORIZATION_FAILED). `explain` adds the operation and the
resource name, from what the caller was doing: pass a `Need` (or several) to `clients.translate`,
or let it infer one from the `doing` text (Kafka API names and kxtx's own phrases are recognised).

Helpers for commands:
- `Need("WRITE", "TransactionalId", txid)` - the permission a step needs;
- `require(need, purpose)` - the AuthorizationError to raise before doing anything (nothing half-done);
- `check_cluster_ops(ops, any_of, purpose)` - a pre-flight check on DescribeCluster's authorized
  operations (None = unknown: no check).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kxtx.errors import AuthorizationError

#: Kafka error name -> the resource type it is about.
AUTHZ_ERRORS = {
    "TOPIC_AUTHORIZATION_FAILED": "Topic",
    "GROUP_AUTHORIZATION_FAILED": "Group",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "TransactionalId",
    "CLUSTER_AUTHORIZATION_FAILED": "Cluster",
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED": "DelegationToken",
}


@dataclass(frozen=True)
class Need:
    """One permission: an ACL operation (Kafka's names: READ, WRITE, DESCRIBE, ALTER, ...) on a resource."""

    operation: str
    resource: str
    name: str | None = None

    def __str__(self) -> str:
        if self.resource == "Cluster" or not self.name:
            return f"{self.operation} on {self.resource}"
        return f"{self.operation} on {self.resource} {self.name!r}"


#: (pattern on what the caller was doing, operation) per resource type; first match wins.
_RULES: dict[str, list[tuple[str, str]]] = {
    "Topic": [
        (r"DescribeProducers", "READ"),
        (r"creat", "CREATE"),
        (r"metadata|end offset|offsets? by time|ListOffsets|describ|LSO|watermark", "DESCRIBE"),
        (r"produc|writ|send|commit|transaction|pipe", "WRITE"),
        (r"fetch|consum|read|dump|poll", "READ"),
    ],
    "Group": [
        (r"list.*group|describ", "DESCRIBE"),
        (r".", "READ"),
    ],
    "TransactionalId": [
        (r"DescribeTransactions|ListTransactions|inspect|describ", "DESCRIBE"),
        (r".", "WRITE"),
    ],
    "Cluster": [
        (r"WriteTxnMarkers|abort", "ALTER"),
        (r"DescribeConfigs|config", "DESCRIBE_CONFIGS"),
        (r"ACL", "ALTER"),
        (r"creat", "CREATE"),
        (r"DescribeCluster|DescribeFeatures|describ|metadata", "DESCRIBE"),
        (r"IdempotentWrite|idempot", "IDEMPOTENT_WRITE"),
    ],
}

#: Purposes phrased for the user when an operation needs more explanation than the doing text.
_PURPOSE = {
    ("Cluster", "ALTER"): "to write transaction markers (WriteTxnMarkers); CLUSTER_ACTION also allows it",
}

_QUOTED = re.compile(r"""['"]([^'"]+)['"]""")
_TXID = re.compile(r"transactional id\s+['\"]?([^'\")\s,]+)", re.I)
_GROUP = re.compile(r"group\s+['\"]?([^'\")\s,]+)", re.I)
_NOT_NAMES = {"metadata", "the", "a", "cluster", "checkpoint", "offsets", "records", "transactions"}
_TOPIC = re.compile(r"(?:topic|of|reading|fetching|in|to)\s+['\"]?([A-Za-z0-9._-]+)", re.I)


def infer(error: str, doing: str) -> Need | None:
    """The permission a failed step most likely lacked, from the error name and the doing text."""
    resource = AUTHZ_ERRORS.get(error)
    if resource is None:
        return None
    operation = next((op for pat, op in _RULES.get(resource, []) if re.search(pat, doing, re.I)), None)
    if operation is None:
        return Need("(some operation)", resource)
    return Need(operation, resource, _name(resource, doing))


def _name(resource: str, doing: str) -> str | None:
    if resource == "Cluster":
        return None
    pattern = {"TransactionalId": _TXID, "Group": _GROUP}.get(resource)
    if pattern is not None:
        m = pattern.search(doing)
        if m:
            return m.group(1)
        if resource == "TransactionalId":
            m = re.search(r"(?:DescribeTransactions|fencing|inspect\w*)\s+['\"]?([^'\"\s,]+)", doing)
            return m.group(1) if m else None
        return None
    m = _QUOTED.search(doing)
    if m:
        return m.group(1)
    words = [w for w in _TOPIC.findall(doing) if w.lower() not in _NOT_NAMES]
    return words[-1] if words else None


def explain(error: str, doing: str = "", needs: Iterable[Need] = (), detail: str = "") -> AuthorizationError:
    """The message for an authorization error: "<doing>: not authorized: WRITE on Topic 't' ..."."""
    resource = AUTHZ_ERRORS.get(error, "")
    matching = [n for n in needs if n.resource == resource] or [n for n in needs]
    if not matching:
        guess = infer(error, doing)
        matching = [guess] if guess else []
    where = f"{doing}: " if doing else ""
    if not matching:
        return AuthorizationError(f"{where}not authorized ({error}){': ' + detail if detail else ''}")
    what = " and ".join(str(n) for n in matching)
    purpose = _PURPOSE.get((matching[0].resource, matching[0].operation))
    required = f"{what} is required {purpose}" if purpose else f"the principal needs {what}"
    return AuthorizationError(f"{where}not authorized: {required} ({error})")


def require(need: Need, purpose: str) -> AuthorizationError:
    """The error to raise before acting when a permission is known to be missing."""
    return AuthorizationError(f"not authorized: {need} is required to {purpose}; nothing was changed")


def check_cluster_ops(ops: set[str] | None, any_of: Iterable[str], purpose: str) -> None:
    """Raise when DescribeCluster's authorized operations are known and contain none of `any_of`.

    `ops` comes from `describe_cluster(include_authorized_operations=True)`; with ALL the broker
    lists every operation. None (unknown, e.g. no authorizer answer) passes: the call itself decides."""
    if ops is None:
        return
    wanted = list(any_of)
    if "ALL" in ops or set(wanted) & ops:
        return
    alternatives = " or ".join(wanted[1:])
    need = Need(wanted[0], "Cluster")
    raise AuthorizationError(
        f"not authorized: {need} is required to {purpose}"
        f"{f' ({alternatives} on Cluster also allows it)' if alternatives else ''}; nothing was changed"
    )
