"""The frame every command shares: version, help, lazy imports, exit codes, error boundary."""

import os
import re
import socket
import subprocess
import sys

import pytest

from kxtx import __version__
from kxtx.exitcodes import DESCRIPTIONS, ExitCode, status
from tests import cli

ROOT = cli.ROOT


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends


def test_version():
    assert cli.run("--version").stdout.strip() == f"kxtx {__version__}"


def test_help_lists_every_command():
    from kxtx.cli import docs

    r = cli.run("--help", env={"COLUMNS": "200"})
    for child in docs.tree().children:
        assert re.search(rf"\b{re.escape(child.path[-1])}\b", r.stdout), child.path


def test_help_does_not_import_heavy_libraries():
    code = (
        "import sys, kxtx.cli.app; kxtx.cli.app.app; heavy = [m for m in ('confluent_kafka', 'kafka', "
        "'pyspark', 'pandas', 'pyarrow') if m in sys.modules]; print(heavy)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.stdout.strip() == "[]", r.stdout + r.stderr


def test_usage_error_is_exit_2_without_traceback():
    r = cli.run("cluster", "-b", "127.0.0.1:1", "-X", "no-equals-sign", expect=ExitCode.USAGE)
    assert r.stderr.strip() == "kxtx: error: -X 'no-equals-sign': expected key=value"
    assert "Traceback" not in cli.run("cluster", "--no-such-option", expect=ExitCode.USAGE).stderr


@pytest.mark.parametrize(
    "args, env, file, code, line",
    [
        # librdkafka names an alias by the property it stands for: the message names the one typed
        (
            ("-X", "linger.ms=abc"),
            {},
            "",
            ExitCode.USAGE,
            "-X linger.ms='abc': Invalid value for configuration property \"linger.ms\"",
        ),
        (
            ("-X", "compression.type=zip"),
            {},
            "",
            ExitCode.USAGE,
            '-X compression.type=\'zip\': Invalid value "zip" for configuration property "compression.type"',
        ),
        (
            ("-X", "no.such.setting=1"),
            {},
            "",
            ExitCode.USAGE,
            "-X no.such.setting='1': No such configuration property: \"no.such.setting\"",
        ),  # (exit 1 before: a -X is an option)
        # a file's line, an environment variable's name: settings, not options, so exit 1
        (
            ("--command-config", "{file}"),
            {},
            "linger.ms=5\n# zip is no codec\ncompression.type=zip\n",
            ExitCode.ERROR,
            "compression.type='zip' (in {file}:3): Invalid value \"zip\" for configuration property "
            '"compression.type"',
        ),
        (
            (),
            {"KXTX_SECURITY_PROTOCOL": "tls"},
            "",
            ExitCode.ERROR,
            "security.protocol='tls' (from $KXTX_SECURITY_PROTOCOL): Invalid value \"tls\" for configuration "
            'property "security.protocol"',
        ),
    ],
)
def test_a_refused_setting_is_named_as_typed_and_where(tmp_path, args, env, file, code, line):
    path = tmp_path / "client.properties"
    path.write_text(file)
    argv = [a.format(file=path) for a in args]
    r = cli.run("cluster", "-b", f"127.0.0.1:{_closed_port()}", *argv, env=env, expect=code, timeout=30)
    assert r.stderr.strip() == f"kxtx: error: {line.format(file=path)}"


def test_unreachable_cluster_fails_within_the_timeout_with_one_line():
    # subprocess timeout guards against a hang; the command's own bound is --timeout 2
    r = cli.run(
        "cluster",
        "-b",
        f"127.0.0.1:{_closed_port()}",
        "--timeout",
        "2",
        expect=ExitCode.UNREACHABLE,
        timeout=30,
    )
    assert ExitCode.UNREACHABLE == 69
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kxtx: error:"), r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_debug_shows_the_traceback():
    address = f"127.0.0.1:{_closed_port()}"
    r = cli.run(
        "--debug", "cluster", "-b", address, "--timeout", "1", expect=ExitCode.UNREACHABLE, timeout=30
    )
    assert "Traceback" in r.stderr


def test_missing_bootstrap_is_explained():
    r = cli.run(
        "cluster", env={"KXTX_BOOTSTRAP_SERVERS": "", "KXTX_COMMAND_CONFIG": ""}, expect=ExitCode.ERROR
    )
    assert "no bootstrap servers" in r.stderr


def test_readme_exit_code_table_matches_the_enum():
    text = (ROOT / "README.md").read_text()
    table = {code: (name, meaning) for code, name, meaning in TABLE.findall(text)}
    assert {int(k) for k in table} == {int(c) for c in ExitCode}
    for code in ExitCode:
        name, meaning = table[str(int(code))]
        assert meaning.strip() == DESCRIPTIONS[code]
        # the `-o json` status: the name kxtx writes; a broken pipe writes no document
        assert name.strip() == (
            "(none: nothing on stdout)" if code is ExitCode.BROKEN_PIPE else f"`{status(code)}`"
        )


#: A row of the README's exit code table: code, `-o json` status, meaning.
TABLE = re.compile(r"^\| `(\d+)` \| ([^|]+) \| ([^|]+) \|$", re.M)


def test_exit_codes_keep_their_meaning():
    assert (ExitCode.OK, ExitCode.ERROR, ExitCode.USAGE, ExitCode.PROBLEM_FOUND, ExitCode.INTERRUPTED) == (
        0,
        1,
        2,
        3,
        130,
    )


def test_docs_and_completions_do_not_drift():
    from kxtx.cli import docs

    reference = ROOT / docs.REFERENCE
    assert reference.read_text() == docs.reference_markdown(), (
        f"{docs.REFERENCE} is stale: python scripts/gen_docs.py"
    )
    for name, make in docs.COMPLETIONS.items():
        assert (ROOT / "completions" / name).read_text() == make(), f"completions/{name} is stale"


def test_readme_links_the_command_reference():
    from kxtx.cli import docs

    assert f"]({docs.REFERENCE})" in (ROOT / "README.md").read_text()


def test_bash_completion_offers_subcommands_and_choices():
    import shutil

    if not shutil.which("bash"):
        pytest.fail("bash is needed for this test")
    script = (ROOT / "completions" / "kxtx.bash").read_text()

    def complete(*words):
        line = " ".join(["kxtx", *words])
        prog = (
            f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)}; _kxtx; "
            'printf "%s\\n" "${COMPREPLY[@]}"'
        )
        return subprocess.run(["bash", "-c", prog], capture_output=True, text=True).stdout.split()

    assert "sandbox" in complete("") or "sandbox" in complete("s")
    assert set(complete("sandbox", "st")) == {"start", "status", "stop", "start-node", "stop-node"}
    assert complete("cluster", "--format", "j") == ["json", "jsonl"]


def test_closed_stdout_stops_quietly_with_141(tmp_path):
    # `kxtx ... | head`: the reader is gone before kxtx writes; no "Broken pipe" error, no traceback
    data = tmp_path / "a.jsonl"
    data.write_text('{"a":1}\n')
    proc = cli.start(
        "produce",
        str(data),
        "-t",
        "t",
        "--dry-run",
        "-o",
        "jsonl",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(60) == ExitCode.BROKEN_PIPE == 141
    assert err == ""


def _bash_complete(script: str, *words: str) -> list[str]:
    line = " ".join(["kxtx", *words])
    prog = (
        f'{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)}; _kxtx; printf "%s\\n" "${{COMPREPLY[@]}}"'
    )
    return subprocess.run(["bash", "-c", prog], capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize(
    "words, expected",
    [
        (("produce", "-I", ""), ["jsonl", "csv", "lines"]),
        (("produce", "--input-format", "c"), ["csv"]),
        (("produce", "--on-error", ""), ["fail", "skip", "dlq:"]),
        (("produce", "--on-error", "s"), ["skip"]),
    ],
)
def test_bash_completion_completes_option_values(words, expected):
    """The static script (completions/kxtx.bash) and typer's own (`kxtx --install-completion`)."""
    script = (ROOT / "completions" / "kxtx.bash").read_text()
    assert _bash_complete(script, *words) == expected
    r = cli.run(
        expect=None,
        env={
            "_KXTX_COMPLETE": "complete_bash",
            "COMP_WORDS": " ".join(["kxtx", *words]),
            "COMP_CWORD": str(len(words)),
        },
    )
    assert r.stdout.split() == expected, r.stderr


def test_install_completion_is_in_the_readme_and_works(tmp_path):
    assert "kxtx --install-completion" in (ROOT / "README.md").read_text()
    # typer installs for the shell it runs in: typed in bash (not under a test runner's process tree)
    # ("; exit $?": bash would exec a lone command in its own place, and kxtx would then find no
    # shell among its parents when the suite itself runs detached from one)
    argv = " ".join(cli.argv("--install-completion")) + "; exit $?"
    r = subprocess.run(
        ["bash", "-c", argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kxtx" in (tmp_path / ".bashrc").read_text()
