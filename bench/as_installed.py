"""What the benches do so that the kxtx they run starts as an installed one does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def compile_kxtx() -> None:
    """kxtx's modules compiled once, as a wheel's install leaves them. From a clone, under
    PYTHONDONTWRITEBYTECODE (set on this machine kind), every kxtx run would compile the modules it
    imports again, a start-up cost no installed kxtx pays (bench/README.md, "Start-up")."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "kxtx")], check=True, stdout=subprocess.DEVNULL
    )
