"""`dump partition --records --value-format ...`'s row keys for framed values
(kxtx/schemas/rows.py RowDecoder): the subject it names and why a value does not decode.

The registry is stood in for by what a Reader has fetched already (its schema texts and the
subjects of each id), so no request is made."""

from __future__ import annotations

import base64
import json

import pytest

from kxtx.client.registry import RegistryConfig
from kxtx.schemas import codecs, framing
from kxtx.schemas.rows import RowDecoder
from kxtx.schemas.serde import Reader, _Known

ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}
NESTED = {
    "type": "record",
    "name": "Box",
    "fields": [
        {"name": "order", "type": ORDER},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}


def decoder(topic: str, subjects: dict[int, list[str]]) -> RowDecoder:
    reader = Reader(RegistryConfig("http://registry.invalid:8081"), codecs.AVRO)
    reader.known = {
        7: _Known(codecs.AVRO, json.dumps(ORDER), {}),
        8: _Known(codecs.AVRO, json.dumps(NESTED), {}),
    }
    reader._subjects = dict(subjects)
    return RowDecoder(reader, "avro", topic)


def value(sid: int, obj: dict) -> bytes:
    schema = ORDER if sid == 7 else NESTED
    return framing.frame(sid, codecs.AvroCodec(json.dumps(schema)).encode(obj))


def test_the_topics_own_subject_is_named():
    shown, extra = decoder("orders", {7: ["orders-value", "archive-value"]})(
        value(7, {"id": 1, "name": "a"}), "value"
    )
    assert shown == {"id": 1, "name": "a"}
    assert extra == {"value_schema_id": 7, "value_subject": "orders-value"}


def test_a_topic_without_a_subject_of_its_own_names_none_and_lists_the_subjects_of_the_id():
    """A DLQ holds records of another topic's schema: `value_subject` named that other subject,
    as if the record were of that topic (issue 62)."""
    _, extra = decoder("orders-dlq", {7: ["orders-value"]})(value(7, {"id": 1, "name": "a"}), "value")
    assert extra == {"value_schema_id": 7, "value_subject": None, "value_schema_subjects": ["orders-value"]}


@pytest.mark.parametrize("sid", [7, 8])  # a flat record (the generated decoder first) and a nested one
def test_a_known_id_whose_body_is_cut_short_says_so_and_keeps_its_subject(sid):
    """fastavro's EOFError has no message: the error ended in `EOFError:` (issue 62)."""
    whole = value(
        sid, {"id": 1, "name": "abc"} if sid == 7 else {"order": {"id": 1, "name": "abc"}, "tags": ["x"]}
    )
    cut = whole[:-2]
    shown, extra = decoder("orders", {sid: ["orders-value"]})(cut, "value")
    assert extra["value_error"] == (
        "not an Avro record of this schema: the value ends before the record does "
        f"({len(cut) - framing.HEADER} bytes after the 5-byte header)"
    )
    assert (extra["value_schema_id"], extra["value_subject"]) == (sid, "orders-value")
    assert shown == base64.b64encode(cut).decode()


def test_an_id_the_registry_does_not_know_has_no_subject():
    from kxtx.schemas.serde import UnknownSchema

    dec = decoder("orders", {})

    def unknown(schema_id):
        raise UnknownSchema(f"schema id {schema_id} is not in schema registry http://registry.invalid:8081")

    dec.reader._fetch = unknown  # type: ignore[method-assign]
    _, extra = dec(framing.frame(99, b"\x02"), "value")
    assert extra["value_subject"] is None and "schema id 99 is not in" in extra["value_error"]


@pytest.mark.parametrize("body", [b"", b"\x02", b"\xff", b"\x02\x06a"])
def test_a_body_cut_anywhere_says_where_it_ends(body):
    """Cut before a field, inside a varint, inside a string: fastavro says `EOFError: `,
    `IndexError: string index out of range` or `EOFError: Expected 3 bytes, read 1`."""
    with pytest.raises(codecs.Mismatch) as info:
        codecs.AvroCodec(json.dumps(ORDER)).decode(body)
    assert str(info.value) == (
        "not an Avro record of this schema: the value ends before the record does "
        f"({len(body)} byte{'' if len(body) == 1 else 's'} after the 5-byte header)"
    )
