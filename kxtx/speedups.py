"""The optional C loops (kxtx/native.c): the module where it was built and is not turned off,
else None, and the callers run the same loops in Python.

`KXTX_SPEEDUPS=0` turns it off (to compare, or to rule it out). The build is optional
(setup.py): without a C compiler or Python's headers pip installs kxtx without it.
"""

from __future__ import annotations

import os
from typing import Any

_module: Any = None  # once looked up: the module, or False


def module() -> Any:
    """kxtx.native, or None."""
    global _module
    if _module is None:
        _module = False
        if os.environ.get("KXTX_SPEEDUPS", "1") != "0":
            try:
                from kxtx import native

                _module = native
            except ImportError:
                pass
    return _module or None
