"""kxtx.pipe.fast.daemon: which of Spark's zips leave the Python daemon's path (no Spark needed)."""

from __future__ import annotations

import zipfile

import pytest

from kxtx.pipe.fast.daemon import installed_twin, without_twin_zips


def _zip(path, files: dict[str, str]) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return str(path)


def _installed(root, package: str, version: str | None) -> str:
    pkg = root / package
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    if version is not None:
        (pkg / "version.py").write_text(version)
    return str(root)


SAME = '__version__ = "4.3.0"\n'


@pytest.mark.parametrize(
    "zip_name,zipped,installed_package,installed_version,dropped",
    [
        ("pyspark.zip", {"pyspark/version.py": SAME}, "pyspark", SAME, True),
        ("py4j-0.10.9.9-src.zip", {"py4j/version.py": SAME}, "py4j", SAME, True),
        # another version installed: the zip matches the JVM, it stays
        ("pyspark.zip", {"pyspark/version.py": SAME}, "pyspark", '__version__ = "4.2.1"\n', False),
        # nothing installed outside the zip
        ("pyspark.zip", {"pyspark/version.py": SAME}, "other", SAME, False),
        # an installed package without a version file, a zip without one
        ("pyspark.zip", {"pyspark/version.py": SAME}, "pyspark", None, False),
        ("pyspark.zip", {"pyspark/__init__.py": ""}, "pyspark", SAME, False),
        # a zip that is not one of Spark's
        ("deps.zip", {"pyspark/version.py": SAME}, "pyspark", SAME, False),
    ],
)
def test_a_zip_leaves_only_for_its_installed_twin(
    tmp_path, zip_name, zipped, installed_package, installed_version, dropped
):
    archive = _zip(tmp_path / zip_name, zipped)
    site = _installed(tmp_path / "site", installed_package, installed_version)
    path = [archive, "/nowhere", site]
    assert installed_twin(archive, path) is dropped
    assert without_twin_zips(path) == ([p for p in path if p != archive] if dropped else path)


def test_a_broken_zip_stays(tmp_path):
    archive = tmp_path / "pyspark.zip"
    archive.write_bytes(b"not a zip")
    path = [str(archive), _installed(tmp_path / "site", "pyspark", SAME)]
    assert without_twin_zips(path) == path
