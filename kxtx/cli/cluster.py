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
from kxtx.cli.output import emit


@boundary
def cluster(
    bootstrap: BootstrapOpt = None,
    config: ConfigOpt = None,
    command_config: CommandConfigOpt = None,
    timeout: TimeoutOpt = None,
    fmt: FormatOpt = None,
) -> None:
    """Check the connection: brokers, controller, transaction.version (KIP-890) and group.version."""
    from kxtx.ops import clusterinfo as lib

    emit(lib.describe(connection(bootstrap, config, command_config, timeout)), fmt, title="cluster")
