"""Control records: transaction markers (COMMIT / ABORT) and KRaft control types (spec section 7).

Consumer libraries (Java and librdkafka alike) never hand control records to applications; this
decoder serves raw batches (a fetch client of our own, segment dumps) and tests.
"""

from __future__ import annotations

from typing import Any

from kxtx.records.wire import read_int16, read_int32
from kxtx.wording import plural

CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
_HIGHEST_KEY_VERSION = 0


def decode_control(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """Decode a control record. Never raises: problems come back in `note` with the raw bytes."""
    if key is None or len(key) < 4:
        return {
            "type": "INVALID",
            "note": f"control key of {plural(0 if key is None else len(key), 'byte')} (need 4)",
            "raw_key": None if key is None else key.hex(),
        }
    version = read_int16(key, 0)[0]
    code = read_int16(key, 2)[0]
    if version < 0:
        return {"type": "INVALID", "note": f"negative control key version {version}", "raw_key": key.hex()}
    # A newer key version is read as the highest known one (ControlRecordType.parseTypeId).
    out: dict[str, Any] = {
        "key_version": version,
        "type_code": code,
        "type": CONTROL_TYPES.get(code, "UNKNOWN"),
    }
    if code in (0, 1):
        if value is not None and len(value) >= 6:
            out["value_version"] = read_int16(value, 0)[0]
            out["coordinator_epoch"] = read_int32(value, 2)[0]
        else:
            out["note"] = "transaction marker value shorter than 6 bytes"
            out["raw_value"] = None if value is None else value.hex()
    elif value is not None:
        out["raw_value"] = value.hex()
    return out
