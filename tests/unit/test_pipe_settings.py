"""`kxtx pipe` settings: which mode `auto` runs, the batch size each mode defaults to, and what a
^pattern input takes."""

from __future__ import annotations

import re

import pytest

from kxtx.errors import UsageError
from kxtx.pipe.runconfig import (
    DEFAULT_BATCH_RECORDS,
    EXECUTOR_BATCH_RECORDS,
    PipeConfig,
    matches,
    subscription_conf,
)


@pytest.mark.parametrize(
    "mode, master, batch, want_mode, want_batch",
    [
        ("auto", "local[*]", None, "executors", EXECUTOR_BATCH_RECORDS),
        ("auto", "local[2]", None, "executors", EXECUTOR_BATCH_RECORDS),
        ("auto", "spark://h:7077", None, "executors", EXECUTOR_BATCH_RECORDS),
        ("driver", "local[*]", None, "driver", DEFAULT_BATCH_RECORDS),
        ("driver", "spark://h:7077", None, "driver", DEFAULT_BATCH_RECORDS),
        ("executors", "local[*]", None, "executors", EXECUTOR_BATCH_RECORDS),
        ("executors", "local[*]", 7, "executors", 7),  # what the user gives wins
        ("driver", "local[*]", 7, "driver", 7),
    ],
)
def test_mode_and_batch_default(mode, master, batch, want_mode, want_batch):
    cfg = PipeConfig(
        inputs=["in"], out="out", group="g", udf="m:f", mode=mode, master=master, batch_max_records=batch
    )
    run = cfg.resolve()
    assert (run.mode, run.batch_max_records) == (want_mode, want_batch)
    assert (cfg.mode, cfg.batch_max_records) == (mode, batch)  # resolving fills in a copy
    assert EXECUTOR_BATCH_RECORDS != DEFAULT_BATCH_RECORDS  # else the table proves nothing


@pytest.mark.parametrize(
    "spec, topic, want",
    [
        ("orders", "orders", True),
        ("orders", "orders-eu", False),  # a name is a name
        ("^orders", "orders-eu", True),  # librdkafka searches: only ^ anchors
        ("^orders$", "orders-eu", False),
        ("^orders.*", "orders", True),
        ("^(eu|us)-orders", "us-orders-v2", True),
        ("^(eu|us)-orders", "ap-orders", False),
        ("^.*", "__consumer_offsets", True),  # hence subscription_conf
        ("^o.ders", "o.ders", True),
    ],
)
def test_matches(spec, topic, want):
    assert matches(spec, topic) is want


@pytest.mark.parametrize(
    "props, inputs, want",
    [
        ({}, ["orders"], {}),  # no pattern: nothing hidden, an internal topic can be named
        (
            {},
            ["^orders.*"],
            {"topic.blacklist": r"^(__consumer_offsets|__transaction_state|__share_group_state)$"},
        ),
        (
            {"topic.blacklist": "^tmp-.*"},
            ["^.*"],
            {"topic.blacklist": r"^tmp-.*,^(__consumer_offsets|__transaction_state|__share_group_state)$"},
        ),
        (
            {},
            ["^x", "__transaction_state"],
            {"topic.blacklist": r"^(__consumer_offsets|__share_group_state)$"},
        ),
        ({}, ["^x", "__consumer_offsets", "__transaction_state", "__share_group_state"], {}),
    ],
)
def test_subscription_conf(props, inputs, want):
    assert subscription_conf(props, inputs) == want


@pytest.mark.parametrize("hidden", ["__consumer_offsets", "__transaction_state"])
def test_the_blacklist_hides_internal_topics_and_nothing_else(hidden):
    pattern = subscription_conf({}, ["^.*"])["topic.blacklist"]
    assert re.search(pattern, hidden)
    assert not re.search(pattern, hidden + "_copy")
    assert not re.search(pattern, "orders")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"inputs": ["^.*"], "out": "b"}, r"--out cannot be one of the --in topics .*--in \^\.\* takes 'b'"),
        ({"inputs": ["a", "^o"], "out": "orders-out"}, r"--in \^o takes 'orders-out'"),
        (
            {"inputs": ["^in-.*"], "out": "b", "dlq": "in-dlq"},
            r"dead-letter topic cannot be an input topic \(--in \^in-\.\* takes 'in-dlq'\)",
        ),
        ({"inputs": ["^(open"], "out": "b"}, r"--in \^\(open: not a regular expression"),
    ],
)
def test_patterns_that_take_the_output_or_do_not_parse_are_usage_errors(kwargs, message):
    cfg = PipeConfig(**{"group": "g", "udf": "m:f", **kwargs})
    with pytest.raises(UsageError, match=message):
        cfg.validate()


def test_a_pattern_that_leaves_the_outputs_alone_is_fine():
    cfg = PipeConfig(inputs=["^in-.*"], out="out", group="g", udf="m:f", dlq="dlq")
    cfg.validate()
    assert cfg.transactional_id is None and cfg.resolve().transactional_id
