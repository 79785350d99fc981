"""scripts/cpu_by_kind.py: the process kinds it sums CPU by, and a real measurement of a child."""

import importlib.util
import json
import sys

import pytest

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("cpu_by_kind", ROOT / "scripts" / "cpu_by_kind.py")
assert spec and spec.loader
cpu_by_kind = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cpu_by_kind)

J = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java -Xmx384m -cp /venv/lib/python3.11/site-packages/x.jar"


@pytest.mark.parametrize(
    "cmdline, kind",
    [
        (f"{J} kafka.Kafka /tmp/node-1/server.properties", "kafka broker"),
        (f"{J} kafka.tools.StorageTool format -t x -c c", "kafka storage format"),
        (f"{J} org.apache.spark.deploy.SparkSubmit --conf a=b pyspark-shell", "spark driver jvm"),
        (f"{J} org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url x", "spark executor jvm"),
        (f"{J} org.apache.spark.deploy.worker.Worker --host 127.0.0.2", "spark standalone daemon"),
        (f"{J} org.apache.kafka.tools.TransactionsCommand list", "kafka tool"),
        (f"{J} com.example.Main", "java other"),
        ("/work/venv/bin/python -m kxtx pipe --in a --out b", "kxtx cli"),
        ("/work/venv/bin/python -m pyspark.daemon pyspark.worker", "spark python worker"),
        ("/work/venv/bin/python -m kxtx.pipe.fast.daemon pyspark.worker", "spark python worker"),
        ("/work/venv/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))", "pytest-xdist worker"),
        ("/work/venv/bin/python -m pytest -q -n 3", "pytest"),
        ("/usr/bin/python3 -c pass", "python other"),
        ("bash /venv/lib/python3.11/site-packages/pyspark/bin/spark-class org.x", "bash spark-class"),
        ("/usr/bin/prometheus --config.file x", "prometheus"),
        ("", "kernel thread"),
    ],
)
def test_kind_of_a_process(cmdline, kind):
    assert cpu_by_kind.kind(cmdline) == kind


def test_a_child_that_burns_cpu_is_counted_under_its_kind(tmp_path):
    out = tmp_path / "cpu.json"
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass\n"
    assert cpu_by_kind.main([str(out), "--", sys.executable, "-c", burn]) == 0
    got = json.loads(out.read_text())
    assert got["exit_code"] == 0 and got["wall_s"] >= 1.0
    python = got["by_kind"]["python other"]
    assert python["cpu_s"] >= 0.6, got
    if python["processes"] == 1:  # the sampler counts the whole machine (see the test below)
        assert python["cpu_s"] <= 1.5, got
    assert got["machine_busy_cpu_s"] >= got["by_kind"]["python other"]["cpu_s"] - 0.3, got


def test_a_shell_that_execs_is_counted_under_the_program_it_became(tmp_path):
    """Spark's `bash spark-class` execs the driver JVM: the CPU is the JVM's, not the shell's. The
    shell waits first, so the sampler sees it as a shell before the exec."""
    out = tmp_path / "cpu.json"
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass\n"
    script = f"sleep 0.6; exec {sys.executable} -c '{burn}'"
    assert cpu_by_kind.main([str(out), "--", "bash", "-c", script]) == 0
    got = json.loads(out.read_text())["by_kind"]
    assert got["python other"]["cpu_s"] >= 0.6, got
    # The sampler counts every process of the machine: a bound on the kind holds only when the
    # burner was its one process (in the full suite, other Python processes run beside it).
    if got["python other"]["processes"] == 1:
        assert got["python other"]["cpu_s"] <= 1.5, got
    assert "bash -c" not in got, got


def test_usage_without_a_command():
    assert cpu_by_kind.main(["out.json"]) == 2
