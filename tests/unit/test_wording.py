from types import SimpleNamespace

import pytest

from kxtx.wording import article, plural


@pytest.mark.parametrize(
    "count, noun, expected",
    [
        (0, "transaction", "0 transactions"),
        (1, "transaction", "1 transaction"),
        (2, "transaction", "2 transactions"),
        (1, "row", "1 row"),
        (12345, "record", "12,345 records"),
        (2, "process", "2 processes"),
        (1, "byte", "1 byte"),
    ],
)
def test_plural(count, noun, expected):
    assert plural(count, noun) == expected


@pytest.mark.parametrize(
    "word, expected",
    [
        ("int", "an int"),
        ("str", "a str"),
        ("dict", "a dict"),
        ("object", "an object"),
        ("Element", "an Element"),
        ("NoneType", "a NoneType"),
    ],
)
def test_article(word, expected):
    assert article(word) == expected


def test_messages_count_in_the_singular_when_there_is_one():
    from kxtx.pipe.stats import PipeInterrupted
    from kxtx.records import TXN_TOPIC, decode
    from tests.unit import record_encoder as e

    rec = decode(TXN_TOPIC, e.key(0, e.string("tx")), b"\x00")
    assert "value of 1 byte has no version" in rec.notes
    stop = PipeInterrupted(SimpleNamespace(records_in=1, transactions=1), 2)
    assert str(stop).startswith("stopped by SIGINT after 1 record in 1 transaction;")
