"""Exceptions that the CLI boundary turns into one-line messages and exit codes.

Library modules raise these (never print, never exit). Anything else that escapes is a bug or an
unexpected library error; the boundary still prints it on one line, with the traceback under --debug.
"""

from __future__ import annotations

import signal

from kxtx.exitcodes import ExitCode
from kxtx.signals import exit_status


class KxtxError(Exception):
    """An error with a message meant for the user."""

    exit_code: ExitCode = ExitCode.ERROR
    #: What the command did before it failed or was stopped (see `carry`).
    partial: object = None


def carry(exc: BaseException, partial: object, replace: bool = False) -> BaseException:
    """Attach to `exc` what the run did before it (a summary of what was committed, the rows read so
    far), for the CLI to render with the error; returns `exc`. Any exception takes it, a client's
    or a stop signal's too. The innermost code that knows it attaches it; an outer `carry` leaves
    it as it is, unless it `replace`s it with another form of the same (rows for the output)."""
    if replace or getattr(exc, "partial", None) is None:
        try:
            exc.partial = partial  # type: ignore[attr-defined]
        except AttributeError:  # an exception type without attributes of its own: nothing to keep
            pass
    return exc


def partial_of(exc: BaseException) -> object:
    """What `carry` attached to `exc`, or None."""
    return getattr(exc, "partial", None)


class UsageError(KxtxError):
    """Options that do not fit together, or a setting that cannot be honoured. Exit 2."""

    exit_code = ExitCode.USAGE


class NoSuchTopic(UsageError):
    """A topic named on the command line does not exist: the one message every command gives for
    it, exit 2 (a usage error: nothing was read or changed)."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"{self.fact(topic)}: create it first (kxtx topic create {topic})")
        self.topic = topic

    @staticmethod
    def fact(topic: str) -> str:
        """The first half, for a command that goes on without the topic (a warning)."""
        return f"topic {topic!r} does not exist"

    def __reduce__(self) -> tuple:  # across a process (the audit's workers): rebuilt from the topic
        return (type(self), (self.topic,))


class ConfigError(KxtxError):
    """A connection setting or properties file that is wrong (names the setting / file:line)."""


class InputError(KxtxError):
    """Bad input data (names the file and line)."""


class KafkaOperationError(KxtxError):
    """A Kafka request failed, timed out, or the cluster could not be reached."""


class AuthorizationError(KafkaOperationError):
    """The principal lacks a permission; the message names the operation and resource."""


class Unavailable(KafkaOperationError):
    """The cluster could not serve the request for longer than the command retries: leaders or
    coordinators moving, brokers down, too few in-sync replicas. What was committed stays
    committed; the same command run again continues exactly once. Exit 75 (EX_TEMPFAIL)."""

    exit_code = ExitCode.RETRY


class Unreachable(KafkaOperationError):
    """No bootstrap broker answered: every address refused or did not resolve, or none answered
    within --timeout. Nothing was done. Exit 69 (EX_UNAVAILABLE), apart from bad input's 1 and a
    failing-over cluster's 75."""

    exit_code = ExitCode.UNREACHABLE


class FencedError(KafkaOperationError):
    """Another instance with the same transactional id took over (this one is a zombie)."""


class Refused(KxtxError):
    """A destructive action refused because it was not confirmed. Nothing changed. Exit 2."""

    exit_code = ExitCode.USAGE


class Interrupted(KxtxError):
    """Stopped by a signal after cleaning up (the open transaction was aborted)."""

    def __init__(self, message: str, signum: int = signal.SIGINT) -> None:
        super().__init__(message)
        self.exit_code = ExitCode(exit_status(signum))


def unseen_exit(reasons: list[str]) -> ExitCode:
    """The exit code of a run that could not read everything it reports on (a partition without a
    leader, a broker down or frozen): 75, the same command run again may see it; 1 when a reason is
    a missing permission, which a rerun will meet again."""
    if any("not authorized" in why or "AUTHORIZATION_FAILED" in why for why in reasons):
        return ExitCode.ERROR
    return ExitCode.RETRY
