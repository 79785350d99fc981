"""Keys and values framed for a schema registry, decoded for `dump partition --records`."""

from __future__ import annotations

import base64
from typing import Any

from kxtx.schemas import codecs, framing
from kxtx.schemas.codecs import Mismatch
from kxtx.schemas.serde import Reader, UnknownSchema


class RowDecoder:
    """`decoder(bytes, "key" | "value")` -> (what the row shows, the row's extra keys).

    A decoded part adds `<part>_schema_id` and `<part>_subject` (see `_subject`). A value that cannot be decoded
    (not framed, a schema id the registry does not know, bytes that do not fit the schema) is
    shown as base64 with `<part>_error` saying why, never a crash; a key that is not framed (most
    keys are plain text) is shown as text, as is any part under `auto`."""

    def __init__(self, reader: Reader, how: str, topic: str = "") -> None:
        self.reader, self.how, self.topic = reader, how, topic

    def __call__(self, data: bytes | None, part: str) -> tuple[Any, dict]:
        if data is None:
            return None, {}
        try:
            decoded = self.reader.decode(data)
        except framing.NotFramed as exc:
            why = {f"{part}_error": f"not framed for a schema registry ({exc})"}
            if part == "key" or self.how == "auto":
                # the magic byte, then too few for the header: a frame cut short more likely than
                # text (text does not start with a NUL), so it says so beside the text
                cut = part == "value" and data[:1] == b"\x00" and len(data) < framing.HEADER
                return data.decode("utf-8", "backslashreplace"), why if cut else {}
            return _b64(data), why
        except UnknownSchema as exc:
            sid = framing.schema_id(data)
            return _b64(data), {f"{part}_schema_id": sid, f"{part}_subject": None, f"{part}_error": str(exc)}
        except Mismatch as exc:  # a schema the registry has: its subject as for a decoded one
            sid = framing.schema_id(data)
            return _b64(data), {
                f"{part}_schema_id": sid,
                **self._subject(sid, part),
                f"{part}_error": str(exc),
            }
        return codecs.jsonable(decoded.value), {
            f"{part}_schema_id": decoded.schema_id,
            **self._subject(decoded.schema_id, part),
        }

    def _subject(self, schema_id: int, part: str) -> dict[str, Any]:
        """`<part>_subject`: the topic's own subject (TopicNameStrategy, `TOPIC-value`) when it
        holds the schema id, else None and `<part>_schema_subjects`, the subjects that do (a DLQ
        has no subject of its own: the id is another topic's, and naming that one would say the
        record belongs there; a record name strategy's subjects are listed there too)."""
        subjects = self.reader.subjects(schema_id)
        mine = f"{self.topic}-{part}"
        if mine in subjects:
            return {f"{part}_subject": mine}
        return {f"{part}_subject": None, f"{part}_schema_subjects": subjects}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def decoder(cfg: Any, how: str, topic: str = "") -> RowDecoder:
    expect = None if how == "auto" else codecs.FORMATS[how]
    return RowDecoder(Reader(cfg, expect), how, topic)
