"""The optional C loops (kxtx/fast/native.c): the module where it was built and is not turned off,
else None, and the callers run the same loops in Python.

`KXTX_FAST=0` (or `KXTX_SPEEDUPS=0`) turns it off (to compare, or to rule it out). The build is optional
(setup.py): without a C compiler or Python's headers pip installs kxtx without it.
"""

from __future__ import annotations

import importlib
from typing import Any

from kxtx import fast

_module: Any = None  # once looked up: the module, or False


def module() -> Any:
    """kxtx.fast.native, or None."""
    global _module
    if _module is None:
        _module = False
        if fast.enabled("native"):
            try:  # by name: the module exists only where the build made it
                _module = importlib.import_module("kxtx.fast.native")
            except ImportError:
                pass
    return _module or None
