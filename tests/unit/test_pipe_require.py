"""`kxtx pipe` without the spark extra names every missing module, not only the first one
(the modules are made unimportable: None in sys.modules, which `import` and `find_spec` obey)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kxtx.errors import UsageError
from kxtx.pipe import spark
from tests.conftest import ROOT

# kxtx is not on PyPI ('kxtx[spark]' finds nothing): the line for this editable install
HINT = f"pip install -e '{ROOT}[spark]'"


@pytest.mark.parametrize(
    "blocked, named",
    [
        (("pyspark", "pandas", "pyarrow"), "pyspark, pandas, pyarrow are missing"),
        (("pyspark", "pandas"), "pyspark, pandas are missing"),
        (("pandas",), "pandas is missing"),
        (("pyarrow",), "pyarrow is missing"),
    ],
)
def test_every_missing_module_is_named(monkeypatch, blocked, named):
    for name in blocked:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(UsageError) as err:
        spark.require_pyspark()
    assert str(err.value) == (f"kxtx pipe needs PySpark, pandas and pyarrow ({named}): {HINT}")


def test_with_the_extra_nothing_is_missing():
    spark.require_pyspark()


def test_the_command_names_them_and_exits_2(tmp_path):
    udf = tmp_path / "u.py"
    udf.write_text("def f(v):\n    return v\n")
    code = (
        "import sys\n"
        "for m in ('pyspark', 'pandas', 'pyarrow'):\n"
        "    sys.modules[m] = None\n"
        "sys.argv = ['kxtx', 'pipe', '--in', 'a', '--out', 'b', '--group', 'g', '--udf', sys.argv[1] + ':f',\n"
        "            '-b', '127.0.0.1:1']\n"
        "from kxtx.cli.entry import main\n"
        "main()\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(udf)], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert r.returncode == 2, r.stderr
    assert f"(pyspark, pandas, pyarrow are missing): {HINT}" in r.stderr
