"""The wheel carries the LICENSE (Apache-2.0, as the metadata says) and the generated shell
completions where bash-completion, zsh and fish look for them under the install prefix. Builds the
wheel from a copy of the tracked files with pip, as a release would."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _build_wheel(tmp_path: Path) -> zipfile.ZipFile:
    src = tmp_path / "src"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():  # tracked, not deleted in the work tree
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path / "dist"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "-q",
            "--disable-pip-version-check",
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    (wheel,) = out.glob("kxtx-*.whl")
    return zipfile.ZipFile(wheel)


def test_wheel_has_license_and_completions(tmp_path):
    whl = _build_wheel(tmp_path)
    names = whl.namelist()
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    data = info.replace(".dist-info", ".data")
    license_text = whl.read(f"{info}/licenses/LICENSE").decode()
    assert license_text == (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    metadata = whl.read(f"{info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    for path, source in [
        ("share/bash-completion/completions/kxtx.bash", "kxtx.bash"),
        ("share/zsh/site-functions/_kxtx", "_kxtx"),
        ("share/fish/vendor_completions.d/kxtx.fish", "kxtx.fish"),
    ]:
        assert whl.read(f"{data}/data/{path}") == (ROOT / "completions" / source).read_bytes(), path
