"""kxtx.fast.jvmcds: which archive a JVM maps or writes, and which are kept (the Spark driver's own
choices are in test_pipe_jvmcds.py)."""

from __future__ import annotations

import os

import pytest

from kxtx.fast import jvmcds


def test_the_key_names_the_parts_in_their_order():
    assert jvmcds.archive_key("a", "b") == jvmcds.archive_key("a", "b")
    assert jvmcds.archive_key("a", "b") != jvmcds.archive_key("b", "a")
    assert len(jvmcds.archive_key("a")) == 24


def test_one_writer_at_a_time_then_everyone_maps_the_archive(tmp_path):
    first, pending = jvmcds.plan_archive(tmp_path, "k", one_writer=True)
    assert first == [f"-XX:ArchiveClassesAtExit={pending}", *jvmcds.LOG_OPTIONS]
    assert pending is not None and pending.exists()  # seen by the nodes starting beside it
    # another node starting now: neither writes nor maps (its archive is on its way)
    assert jvmcds.plan_archive(tmp_path, "k", one_writer=True) == ([], None)
    # another key is another archive
    assert jvmcds.plan_archive(tmp_path, "other", one_writer=True)[1] is not None
    pending.write_bytes(b"archive")  # what the JVM writes as it exits
    jvmcds.settle(pending, exited_normally=True)
    assert (tmp_path / "k.jsa").read_bytes() == b"archive" and not pending.exists()
    assert jvmcds.plan_archive(tmp_path, "k", one_writer=True) == (
        [f"-XX:SharedArchiveFile={tmp_path / 'k.jsa'}", *jvmcds.LOG_OPTIONS],
        None,
    )


@pytest.mark.parametrize("normally, content", [(False, b"half an archive"), (True, b"")])
def test_an_archive_not_written_by_a_normal_exit_is_dropped(tmp_path, normally, content):
    _, pending = jvmcds.plan_archive(tmp_path, "k", one_writer=True)
    assert pending is not None
    pending.write_bytes(content)
    jvmcds.settle(pending, exited_normally=normally)
    assert list(tmp_path.iterdir()) == []
    # and the next start writes it
    assert jvmcds.plan_archive(tmp_path, "k", one_writer=True)[1] is not None


def test_a_stale_pending_file_does_not_stop_a_new_writer(tmp_path):
    _, pending = jvmcds.plan_archive(tmp_path, "k", one_writer=True)
    assert pending is not None
    old = pending.stat().st_mtime - jvmcds.ONE_WRITER_S - 1
    os.utime(pending, (old, old))  # left by a node killed before it could write
    assert jvmcds.plan_archive(tmp_path, "k", one_writer=True)[1] is not None


def test_without_a_cache_directory_the_jvm_starts_as_it_would(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert jvmcds.plan_archive(blocker / "cds", "k", one_writer=True) == ([], None)
