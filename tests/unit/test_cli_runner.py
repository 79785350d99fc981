"""The tests' one CLI runner (tests/cli.py), on commands that need no broker."""

import subprocess

import pytest

from kxtx import __version__
from kxtx.exitcodes import ExitCode
from tests import cli


def test_run_returns_the_output_and_the_exit_code():
    r = cli.run("--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"kxtx {__version__}\n", "")
    assert r.args == cli.argv("--version") == [*cli.KXTX, "--version"]


def test_an_unexpected_exit_fails_showing_the_command_the_code_and_stderr():
    with pytest.raises(pytest.fail.Exception) as failed:
        cli.run("--no-such-option")
    message = str(failed.value)
    assert message.startswith("kxtx --no-such-option\nexited 2, expected 0; stderr:\n")
    assert "no such option: --no-such-option" in message


def test_a_failure_shows_the_end_of_a_long_stderr_and_of_stdout():
    r = cli.Result(["x"], 1, "", "first line\n" + "y" * cli.STDERR_TAIL + "\nlast line\n")
    with pytest.raises(pytest.fail.Exception) as failed:
        r.expect(0)
    message = str(failed.value)
    assert "stderr (end):" in message and message.endswith("last line\n")
    assert "first line" not in message and "stdout" not in message
    r = cli.Result(["x"], 2, "KXTX CRITICAL - lag=9\n", "")
    with pytest.raises(pytest.fail.Exception) as failed:
        r.expect(0)
    assert str(failed.value) == "x\nexited 2, expected 0; stderr:\n\nstdout:\nKXTX CRITICAL - lag=9\n"


def test_the_expected_exit_passes_as_an_int_an_exit_code_or_one_of_several_and_none_checks_nothing():
    r = cli.run("--no-such-option", expect=None)
    assert r.returncode == 2
    assert r.expect(ExitCode.USAGE) is r.expect(2) is r.expect((0, 2)) is r
    with pytest.raises(pytest.fail.Exception, match="exited 2, expected 0 or 1"):
        r.expect((1, 0))


def test_check_takes_a_completed_process_too():
    p = subprocess.run(cli.argv("--no-such-option"), capture_output=True, text=True, cwd=cli.ROOT)
    assert cli.check(p, 2) is p
    with pytest.raises(pytest.fail.Exception, match=r"^kxtx --no-such-option\nexited 2, expected 0"):
        cli.check(p)


@pytest.mark.parametrize(
    "args, code, says",
    [
        (
            ["--seconds-per-txn", "30", "-X", "transaction.timeout.ms=20000"],
            2,
            "less than transaction.timeout.ms (20 s)",
        ),
        (["--seconds-per-txn", "5", "-X", "transaction.timeout.ms=20000"], 0, ""),
        (["-X", "transaction.timeout.ms=soon"], 2, "transaction.timeout.ms='soon': expected milliseconds"),
        (["--seconds-per-txn", "5", "--all-or-nothing"], 2, "exclude each other"),
    ],
)
def test_a_dry_run_refuses_what_the_run_would(tmp_path, args, code, says):
    """--dry-run checks the transaction options against the client settings as the run does
    (reading them, connecting to nothing)."""
    data = tmp_path / "a.jsonl"
    data.write_text('{"a":1}\n')
    p = cli.run("produce", str(data), "-t", "t", "--dry-run", "-o", "json", *args, expect=code)
    assert says in p.stderr


def test_json_and_rows_parse_stdout(tmp_path):
    data = tmp_path / "a.jsonl"
    data.write_text('{"a":1}\n{"a":2}\n')
    doc = cli.run("produce", str(data), "-t", "t", "--dry-run", "-o", "json").json
    assert (doc["status"], doc["records"]) == ("ok", 2)
    (row,) = cli.run("produce", str(data), "-t", "t", "--dry-run", "-o", "jsonl").rows
    assert row["records"] == 2


def test_input_as_text_or_bytes():
    r = cli.run("produce", "-", "-t", "t", "--dry-run", "-o", "json", input="a\nb\nc\n")
    assert r.json["records"] == 3
    b = cli.run("produce", "-", "-t", "t", "--dry-run", "-o", "json", input=b"a\nb\n")
    assert isinstance(b.stdout, bytes) and b.json["records"] == 2


def test_env_is_added_and_clean_drops_the_kxtx_variables(monkeypatch):
    monkeypatch.setenv("KXTX_TEST_RUNNER", "1")
    assert cli.environ({"A": "b"})["A"] == "b"
    assert cli.environ()["KXTX_TEST_RUNNER"] == "1"
    assert "KXTX_TEST_RUNNER" not in cli.environ(clean=True)
    assert cli.environ({"KXTX_X": "y"}, clean=True)["KXTX_X"] == "y"


def test_start_runs_in_the_background_and_finish_checks_its_exit():
    proc = cli.start("--version", stdout=subprocess.PIPE, text=True)
    r = cli.finish(proc, timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"kxtx {__version__}\n", None)
    proc = cli.start("--no-such-option", stderr=subprocess.PIPE, text=True)
    with pytest.raises(
        pytest.fail.Exception, match=r"^kxtx --no-such-option\nexited 2, expected 0; stderr:\n"
    ):
        cli.finish(proc, timeout=60)


def test_pipe_args_builds_the_pipe_command_line():
    from tests.integration.pipe_helpers import UDFS, pipe_args

    assert pipe_args("a", "b", "poison", "g", until_idle=3, batch_max_ms=500, mode="driver") == [
        *("--in", "a", "--out", "b", "--group", "g", "--udf", f"{UDFS}:poison"),
        *("--until-idle", "3", "--batch-max-ms", "500", "--mode", "driver"),
    ]
    assert pipe_args("a", "b", None, "g", from_="latest", dry_run=True) == [
        *("--in", "a", "--out", "b", "--group", "g", "--from", "latest", "--dry-run"),
    ]
    assert pipe_args("a", "b", "x.py:f", "g") == [
        "--in",
        "a",
        "--out",
        "b",
        "--group",
        "g",
        "--udf",
        "x.py:f",
    ]
    fresh = pipe_args("a", "b", None, dry_run=True)
    assert fresh[:5] == ["--in", "a", "--out", "b", "--group"] and fresh[5].startswith("g-")
    assert fresh[6:] == ["--dry-run"] and pipe_args("a", "b")[5] != fresh[5]
