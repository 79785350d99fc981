"""The console entry point (`kxtx`, `python -m kxtx`).

Its first act is to cover the start-up (imports, option parsing: ~0.2 s) against stop signals, until
the command's boundary installs its own handling (see `kxtx.signals.while_starting`).
"""

from __future__ import annotations


def main() -> None:
    from kxtx import signals

    signals.while_starting()
    from kxtx.cli.app import main as run

    run()
