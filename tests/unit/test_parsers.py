import pytest

from kxtx.errors import UsageError
from kxtx.parsers import (
    TopicPartitions,
    parse_duration,
    parse_kv,
    parse_minutes,
    parse_properties,
    parse_time,
    parse_topic_partitions,
    split_csv,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a=b", ("a", "b")),
        ("sasl.jaas.config=x=y;", ("sasl.jaas.config", "x=y;")),
        (" linger.ms =5", ("linger.ms", "5")),
        ("empty=", ("empty", "")),
    ],
)
def test_parse_kv(text, expected):
    assert parse_kv(text) == expected


@pytest.mark.parametrize("text", ["novalue", "=v", ""])
def test_parse_kv_rejects(text):
    with pytest.raises(UsageError, match="key=value"):
        parse_kv(text)


def test_split_csv():
    assert split_csv(["a:1,b:2", " c:3 ", ","]) == ["a:1", "b:2", "c:3"]
    assert split_csv(None) == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a=1", {"a": "1"}),
        ("a = 1\n# c\n! c\n\nb:2", {"a": "1", "b": "2"}),
        ("a 1", {"a": "1"}),
        ("k=line1 \\\n    line2", {"k": "line1 line2"}),
        ("path=C\\:\\\\dir", {"path": "C:\\dir"}),
        ("u=\\u00e9", {"u": "é"}),
        ("lonely", {"lonely": ""}),
        (
            'sasl.jaas.config=org.X required username="a" password="p=1";',
            {"sasl.jaas.config": 'org.X required username="a" password="p=1";'},
        ),
        ("dup=1\ndup=2", {"dup": "2"}),
        ("ends=with\\\\", {"ends": "with\\"}),
    ],
)
def test_parse_properties(text, expected):
    assert parse_properties(text) == expected


@pytest.mark.parametrize(
    "text, lines",
    [
        ("a=1", {"a": 1}),
        ("# c\n\na = 1\n! c\nb:2", {"a": 3, "b": 5}),
        ("k=line1 \\\n    line2\nnext=1", {"k": 1, "next": 3}),  # a continuation: the line it starts on
        ("dup=1\ndup=2", {"dup": 2}),  # the line of the value kept
    ],
)
def test_parse_properties_lines(text, lines):
    found: dict[str, int] = {}
    parse_properties(text, lines=found)
    assert found == lines


@pytest.mark.parametrize(
    "text, expected",
    [
        ("orders", TopicPartitions("orders", None)),
        ("orders:3", TopicPartitions("orders", (3,))),
        ("orders:0,1,4-6", TopicPartitions("orders", (0, 1, 4, 5, 6))),
        ("orders:2,1,2", TopicPartitions("orders", (1, 2))),
        ("__consumer_offsets:49", TopicPartitions("__consumer_offsets", (49,))),
    ],
)
def test_parse_topic_partitions(text, expected):
    assert parse_topic_partitions(text) == expected


@pytest.mark.parametrize("text", [":1", "t:x", "t:3-1", "t:1,"])
def test_parse_topic_partitions_rejects(text):
    with pytest.raises(UsageError):
        parse_topic_partitions(text)


@pytest.mark.parametrize(
    "text, seconds",
    [("500ms", 0.5), ("30s", 30), ("15m", 900), ("15min", 900), ("2h", 7200), ("1d", 86400), ("7", 7)],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5 weeks", "-1s", "abc"])
def test_parse_duration_rejects(text):
    with pytest.raises(UsageError):
        parse_duration(text)


def test_parse_time():
    from datetime import datetime, timezone

    now = datetime(2026, 1, 31, 12, 0, tzinfo=timezone.utc)
    epoch_now = int(now.timestamp() * 1000)
    assert parse_time("15m", now) == epoch_now - 900_000
    assert parse_time("1769860800000", now) == 1769860800000
    assert parse_time("2026-01-31T12:00:00Z", now) == epoch_now
    assert parse_time("2026-01-31T12:00:00", now) == epoch_now  # naive = UTC
    assert parse_time("2026-01-31T13:00:00+01:00", now) == epoch_now
    with pytest.raises(UsageError, match="ISO"):
        parse_time("yesterday", now)


@pytest.mark.parametrize(
    "text, minutes",
    [(None, None), ("15", 15.0), ("2.5", 2.5), ("90s", 1.5), ("1h", 60.0), ("30000ms", 0.5)],
)
def test_parse_minutes(text, minutes):
    assert parse_minutes(text) == minutes
