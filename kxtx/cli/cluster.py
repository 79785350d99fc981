"""`kxtx cluster`: can kxtx reach the cluster, and what does it offer for transactions?"""

from __future__ import annotations

from kxtx.cli.common import (
    BootstrapOpt,
    CommandConfigOpt,
    ConfigOpt,
    FormatOpt,
    TimeoutOpt,
    boundary,
    connection,
)
from kxtx.cli.output import OutputFormat, choose, emit


@boundary
def cluster(
    bootstrap: BootstrapOpt = None,
    config: ConfigOpt = None,
    command_config: CommandConfigOpt = None,
    timeout: TimeoutOpt = None,
    fmt: FormatOpt = None,
) -> None:
    """Check the connection: brokers, controller, metadata.version, transaction.version (KIP-890)
    and group.version (null in -o json, "not supported" in the table, on brokers without them)."""
    from kxtx.ops import clusterinfo as lib

    info = lib.describe(connection(bootstrap, config, command_config, timeout))
    if choose(fmt) is OutputFormat.table:
        info.update({k: "not supported" for k in lib.FEATURES if info.get(k) is None})
    emit(info, fmt, title="cluster")
