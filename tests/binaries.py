"""External programs some tests run (Prometheus, promtool, node_exporter from Debian's packages),
and kxtx's optional C module, which those packages' compiler builds (`need_native`).

Absent on a developer's machine: the test is skipped and says how to install them. Under CI (the CI
environment variable set, as `.ci/run` does after installing them) an absent program fails the test:
CI must never pass by skipping these.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, NoReturn

import pytest

#: the Debian package that brings each program
PACKAGES = {
    "java": "openjdk-17-jre-headless",
    "mvn": "maven",
    "openssl": "openssl",
    "gcc": "gcc",
    "prometheus": "prometheus",
    "promtool": "prometheus",
    "prometheus-node-exporter": "prometheus-node-exporter",
    "ss": "iproute2",
}


def need(program: str) -> str:
    """The program's path; else a skip (a fail under CI) naming the package to install."""
    path = shutil.which(program)
    if path:
        return path
    why = f"{program} is not installed (apt-get install {PACKAGES.get(program, program)})"
    _absent(why)


def _absent(why: str) -> NoReturn:
    """Skip the test, saying `why`; under CI, which installs what tests need, fail it."""
    if os.environ.get("CI"):
        pytest.fail(f"{why}; CI must run this test (.ci/run installs what it needs)")
    pytest.skip(why)


def need_native() -> Any:
    """kxtx.fast.native (kxtx/fast/native.c, built by pip where gcc and Python's headers are found); else a
    skip (a fail under CI, whose .ci/run installs both) saying what is missing."""
    import importlib

    try:
        return importlib.import_module("kxtx.fast.native")
    except ImportError:
        _absent(
            "kxtx.fast.native was not built (a C compiler and Python's headers: apt-get install gcc python3-dev)"
        )
