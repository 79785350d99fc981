"""Process exit codes. The README documents this table; keep them in sync (a test checks)."""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    #: Bad command line, or a destructive command refused without --yes. Nothing was changed.
    USAGE = 2
    #: The command worked and found a problem (find-hanging: something hangs).
    PROBLEM_FOUND = 3
    #: No bootstrap broker answered (refused, unresolvable, or silent for --timeout): the cluster
    #: is down or -b is wrong. Nothing was done. 69 = EX_UNAVAILABLE (sysexits.h).
    UNREACHABLE = 69
    #: The cluster stayed unavailable (leaders or coordinators moving, brokers down) longer than the
    #: command's retries, or the schema registry did not answer; what was committed stays
    #: committed. Run the same command again: it continues exactly once. 75 = EX_TEMPFAIL
    #: (sysexits.h), what retry loops look for.
    RETRY = 75
    #: Stopped by SIGHUP (128 + 1: the terminal closed); the open transaction was aborted.
    HANGUP = 129
    #: Stopped by SIGINT (128 + 2); the open transaction was aborted. Also how `dump --follow`
    #: normally ends: a script can still tell a stopped run from one that finished.
    INTERRUPTED = 130
    #: Standard output was closed early (`| head`), 128 + SIGPIPE as a shell reports it.
    BROKEN_PIPE = 141
    #: Stopped by SIGTERM (128 + 15); the open transaction was aborted.
    TERMINATED = 143


def status(code: int) -> str:
    """The name of an exit code in a `-o json` document's "status" (ok, problem_found, retry, ...):
    the member's name, so the README's table and the JSON never need a second list. A code kxtx
    does not define (a worker process killed by a signal it does not handle) is an error."""
    try:
        return ExitCode(code).name.lower()
    except ValueError:
        return ExitCode.ERROR.name.lower()


DESCRIPTIONS = {
    ExitCode.OK: "success; nothing to report",
    ExitCode.ERROR: "error: Kafka, network, authorization, bad input data; the message says what",
    ExitCode.USAGE: "usage error: bad options, a topic that does not exist, or a destructive command refused (no TTY and no --yes); nothing changed",
    ExitCode.PROBLEM_FOUND: "the check ran and found a problem (find-hanging: hanging transactions exist; sandbox status: a node is not running; sandbox stop: no sandbox to stop)",
    ExitCode.UNREACHABLE: "no broker answered at the bootstrap addresses (refused, unresolvable, or silent for --timeout): the cluster is down or -b is wrong; nothing was done",
    ExitCode.RETRY: "the cluster stayed unavailable (brokers down, leaders or coordinators moving), or the schema registry did not answer; committed work is kept: run the same command again to continue exactly once",
    ExitCode.HANGUP: "stopped by SIGHUP (the terminal closed; `kxtx produce` and `kxtx pipe`); any open transaction aborted",
    ExitCode.INTERRUPTED: "stopped by SIGINT (Ctrl-C), also how `dump --follow` normally ends; any open transaction aborted",
    ExitCode.BROKEN_PIPE: "stdout closed by the reader (e.g. piped into `head`); stopped without a message",
    ExitCode.TERMINATED: "stopped by SIGTERM, as 130; any open transaction aborted",
}
