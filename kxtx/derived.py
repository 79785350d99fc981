"""Names kxtx derives from what a command line works on (produce's transactional id, a pipe's
consumer group and transactional id): the same inputs give the same name on every run and host,
so running the same line again continues what the last run committed instead of starting over."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def derived_name(prefix: str, parts: Iterable[str], digits: int = 12) -> str:
    """`PREFIX-HASH`: HASH is the first `digits` hex digits of the SHA-256 of `parts`, in order.
    Callers put in what identifies the work and nothing that a rerun may change (batch sizes,
    client settings): a different name is a different group or id, which starts from scratch."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:digits]
    return f"{prefix}-{digest}"
