"""`kxtx cluster`: can kxtx reach the cluster, and what does it offer for transactions?"""

from __future__ import annotations

from kxtx.cli.common import (
    Shared,
    command,
)
from kxtx.cli.output import OutputFormat, choose, emit


@command()
def cluster(
    *,
    shared: Shared,
) -> None:
    """Check the connection: brokers, controller, metadata.version, transaction.version (KIP-890)
    and group.version (null in -o json, "not supported" in the table, on brokers without them)."""
    from kxtx.ops import clusterinfo as lib

    info = lib.describe(shared.settings())
    if choose(shared.fmt) is OutputFormat.table:
        info.update({k: "not supported" for k in lib.FEATURES if info.get(k) is None})
    emit(info, shared.fmt, title="cluster")
