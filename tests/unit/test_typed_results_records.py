"""What `dump txn-state` and `dump offsets` write from the rows they build, byte for byte: records of
every kind the decoders meet (their fast paths, the generic readers, tombstones, undecodable bytes
with notes, a record of an open transaction) dumped through the commands' own pipeline and written
as a table, json and jsonl (issue 44: the rows' type; the decoded keys and values are the spec's
fields, version by version)."""

from __future__ import annotations

import io
import json
import sys

import pytest

import kxtx.dump.runner as dump
from kxtx.cli import output
from kxtx.cli.common import OutputFormat
from kxtx.client.settings import Settings
from kxtx.dump.runner import DumpRequest
from tests.unit import record_encoder as e
from tests.unit.test_records_fast import v0, v1
from tests.unit.test_records_group_classic import _group_value

TXN_KEY = e.key(0, e.string("tx-é"))
OFF_KEY = e.key(1, e.string("grp"), e.string("orders"), e.i32(7))
T0 = 1_700_000_000_000
RECORDS = {
    dump.TXN_TOPIC: [
        (3, 0, T0, TXN_KEY, v0(1, [("orders", [0, 1]), ("pay", [])]), None),  # fast path, v0
        (3, 1, T0 + 1, TXN_KEY, v1(4, [], {0: e.i64(7), 2: e.i16(2)}), None),  # fast path, v1 with tags
        (3, 2, T0 + 2, TXN_KEY, v0(9, None), None),  # unknown state: generic, a note
        (3, 3, T0 + 3, TXN_KEY, e.value(2, b""), None),  # unknown version: raw value, a note
        (3, 4, T0 + 4, TXN_KEY, None, None),  # tombstone: the id expired
        (3, 5, -1, e.key(99, b"??"), b"\x00\x00", None),  # unknown type: raw key and value, no time
    ],
    dump.OFFSETS_TOPIC: [
        (7, 0, T0, OFF_KEY, e.value(3, e.i64(5) + e.i32(-1) + e.string("") + e.i64(T0)), None),
        (
            7,
            1,
            T0 + 1,
            OFF_KEY,
            e.value(4, e.i64(6) + e.i32(4) + e.cstring("m") + e.i64(T0) + e.tags({0: bytes(range(16))})),
            "committed",
        ),
        (7, 2, T0 + 2, OFF_KEY, e.value(1, e.i64(5) + e.string("x") + e.i64(T0) + e.i64(T0 + 9)), None),
        (7, 3, T0 + 3, e.key(2, e.string("grp")), _group_value(3), None),  # classic group, consumer protocol
        (7, 4, T0 + 4, OFF_KEY, None, "aborted"),  # tombstone
        (7, 5, T0 + 5, e.key(99, b"??"), b"\x00\x00", None),  # unknown type
        (7, 6, T0 + 6, b"", None, None),  # a key without a type prefix
    ],
}


class _Source:
    def __init__(self, settings, topic, *args, **kwargs):
        self.topic = topic

    def batches(self, partitions, start, follow):
        chosen = [r for r in RECORDS[self.topic] if r[0] in partitions]
        for i in range(0, len(chosen), 3):
            yield chosen[i : i + 3]

    def close(self):
        pass


def _written(monkeypatch, topic: str, fmt: str) -> str:
    """What `kxtx dump txn-state|offsets -o FMT` writes on stdout for RECORDS."""
    from kxtx.cli import dump as cli

    monkeypatch.setattr(dump, "partition_count", lambda settings, topic: 50)
    monkeypatch.setattr(dump, "ConfluentSource", _Source)
    monkeypatch.setattr(dump, "RawFetchSource", _Source, raising=False)
    monkeypatch.setenv("COLUMNS", "100")
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", out)
    settings = Settings(props={"bootstrap.servers": "localhost:9092"})
    if topic == dump.TXN_TOPIC:
        how = (DumpRequest(topic=topic), cli._txn_cell, cli.TXN_COLUMNS)
    else:
        how = (DumpRequest(topic=topic), cli._offsets_cell, [*cli.OFFSETS_COLUMNS, "txn"])
    with output.document(OutputFormat(fmt), "records") as doc:
        cli._dump(settings, how[0], OutputFormat(fmt), 1, how[1], how[2])
        if doc is not None:
            doc.write(0)
    out.flush()
    return raw.getvalue().decode("utf-8")


def _document(jsonl: str) -> str:
    """The json document of the jsonl lines: the rows under "records"."""
    doc = {
        "status": "ok",
        "exit_code": 0,
        "error": None,
        "records": [json.loads(x) for x in jsonl.splitlines()],
    }
    return output._dumps(doc, indent=2) + "\n"


TXN_JSONL = """\
{"partition":3,"offset":0,"timestamp_ms":1700000000000,"time":"2023-11-14T22:13:20.000+00:00","type":"TransactionLog","type_id":0,"key":{"transactional_id":"tx-é"},"version":0,"value":{"producer_id":42,"producer_epoch":3,"transaction_timeout_ms":60000,"transaction_status":"Ongoing","transaction_partitions":[{"topic":"orders","partition_ids":[0,1]},{"topic":"pay","partition_ids":[]}],"transaction_last_update_timestamp_ms":1700000000000,"transaction_last_update_time":"2023-11-14T22:13:20.000+00:00","transaction_start_timestamp_ms":1699999999000,"transaction_start_time":"2023-11-14T22:13:19.000+00:00","transaction_status_code":1},"tombstone":false}
{"partition":3,"offset":1,"timestamp_ms":1700000000001,"time":"2023-11-14T22:13:20.001+00:00","type":"TransactionLog","type_id":0,"key":{"transactional_id":"tx-é"},"version":1,"value":{"producer_id":42,"producer_epoch":3,"transaction_timeout_ms":60000,"transaction_status":"CompleteCommit","transaction_partitions":[],"transaction_last_update_timestamp_ms":1700000000000,"transaction_last_update_time":"2023-11-14T22:13:20.000+00:00","transaction_start_timestamp_ms":1699999999000,"transaction_start_time":"2023-11-14T22:13:19.000+00:00","previous_producer_id":7,"next_producer_id":-1,"client_transaction_version":2,"next_producer_epoch":-1,"transaction_status_code":4},"tombstone":false}
{"partition":3,"offset":2,"timestamp_ms":1700000000002,"time":"2023-11-14T22:13:20.002+00:00","type":"TransactionLog","type_id":0,"key":{"transactional_id":"tx-é"},"version":0,"value":{"producer_id":42,"producer_epoch":3,"transaction_timeout_ms":60000,"transaction_status":"Unknown(9)","transaction_partitions":null,"transaction_last_update_timestamp_ms":1700000000000,"transaction_last_update_time":"2023-11-14T22:13:20.000+00:00","transaction_start_timestamp_ms":1699999999000,"transaction_start_time":"2023-11-14T22:13:19.000+00:00","transaction_status_code":9},"tombstone":false,"notes":["unknown transaction state code 9"]}
{"partition":3,"offset":3,"timestamp_ms":1700000000003,"time":"2023-11-14T22:13:20.003+00:00","type":"TransactionLog","type_id":0,"key":{"transactional_id":"tx-é"},"version":2,"value":null,"tombstone":false,"notes":["unknown TransactionLog value version 2"],"raw_value":"0002"}
{"partition":3,"offset":4,"timestamp_ms":1700000000004,"time":"2023-11-14T22:13:20.004+00:00","type":"TransactionLog","type_id":0,"key":{"transactional_id":"tx-é"},"version":null,"value":null,"tombstone":true}
{"partition":3,"offset":5,"timestamp_ms":-1,"time":null,"type":"Unknown","type_id":99,"key":null,"version":null,"value":null,"tombstone":false,"notes":["unknown record type 99 in __transaction_state"],"raw_key":"00633f3f","raw_value":"0000"}
"""

TXN_TABLE = """\
1 of 6 ─────────────────────────────────────────────────────────────────────────────────────────────
partition         3                            
offset            0                            
time              2023-11-14T22:13:20.000+00:00
transactional_id  tx-é                         
state             Ongoing                      
producer_id       42                           
producer_epoch    3                            
timeout_ms        60000                        
partitions        orders:0,1 pay:              
notes             -                            
2 of 6 ─────────────────────────────────────────────────────────────────────────────────────────────
partition         3                            
offset            1                            
time              2023-11-14T22:13:20.001+00:00
transactional_id  tx-é                         
state             CompleteCommit               
producer_id       42                           
producer_epoch    3                            
timeout_ms        60000                        
partitions                                     
notes             -                            
3 of 6 ─────────────────────────────────────────────────────────────────────────────────────────────
partition         3                               
offset            2                               
time              2023-11-14T22:13:20.002+00:00   
transactional_id  tx-é                            
state             Unknown(9)                      
producer_id       42                              
producer_epoch    3                               
timeout_ms        60000                           
partitions        -                               
notes             unknown transaction state code 9
4 of 6 ─────────────────────────────────────────────────────────────────────────────────────────────
partition         3                                     
offset            3                                     
time              2023-11-14T22:13:20.003+00:00         
transactional_id  tx-é                                  
state             raw 0002                              
producer_id       -                                     
producer_epoch    -                                     
timeout_ms        -                                     
partitions        -                                     
notes             unknown TransactionLog value version 2
5 of 6 ─────────────────────────────────────────────────────────────────────────────────────────────
partition         3                            
offset            4                            
time              2023-11-14T22:13:20.004+00:00
transactional_id  tx-é                         
state             (deleted: id expired)        
producer_id       -                            
producer_epoch    -                            
timeout_ms        -                            
partitions        -                            
notes             -                            
6 of 6 ─────────────────────────────────────────────────────────────────────────────────────────────
partition         3                                            
offset            5                                            
time              -                                            
transactional_id  00633f3f                                     
state             raw 0000                                     
producer_id       -                                            
producer_epoch    -                                            
timeout_ms        -                                            
partitions        -                                            
notes             unknown record type 99 in __transaction_state
"""  # noqa: W291 - rich pads each block to its width

OFFSETS_JSONL = """\
{"partition":7,"offset":0,"timestamp_ms":1700000000000,"time":"2023-11-14T22:13:20.000+00:00","type":"OffsetCommit","type_id":1,"key":{"group":"grp","topic":"orders","partition":7},"version":3,"value":{"offset":5,"leader_epoch":-1,"metadata":"","commit_timestamp":1700000000000,"commit_time":"2023-11-14T22:13:20.000+00:00"},"tombstone":false}
{"partition":7,"offset":1,"timestamp_ms":1700000000001,"time":"2023-11-14T22:13:20.001+00:00","type":"OffsetCommit","type_id":1,"key":{"group":"grp","topic":"orders","partition":7},"version":4,"value":{"offset":6,"leader_epoch":4,"metadata":"m","commit_timestamp":1700000000000,"commit_time":"2023-11-14T22:13:20.000+00:00","topic_id":"AAECAwQFBgcICQoLDA0ODw"},"tombstone":false,"txn":"committed"}
{"partition":7,"offset":2,"timestamp_ms":1700000000002,"time":"2023-11-14T22:13:20.002+00:00","type":"OffsetCommit","type_id":1,"key":{"group":"grp","topic":"orders","partition":7},"version":1,"value":{"offset":5,"metadata":"x","commit_timestamp":1700000000000,"commit_time":"2023-11-14T22:13:20.000+00:00","expire_timestamp":1700000000009,"expire_time":"2023-11-14T22:13:20.009+00:00"},"tombstone":false}
{"partition":7,"offset":3,"timestamp_ms":1700000000003,"time":"2023-11-14T22:13:20.003+00:00","type":"GroupMetadata","type_id":2,"key":{"group":"grp"},"version":3,"value":{"protocol_type":"consumer","generation":9,"protocol":"range","leader":"m-1","current_state_timestamp":1700,"current_state_time":"1970-01-01T00:00:01.700+00:00","members":[{"member_id":"m-1","group_instance_id":"inst-1","client_id":"client","client_host":"/10.0.0.1","rebalance_timeout":300000,"session_timeout":45000,"subscription":{"version":3,"topics":["orders"],"user_data_size":null,"owned_partitions":[],"generation_id":5,"rack_id":null},"assignment":{"version":3,"assigned_partitions":[{"topic":"orders","partitions":[0,2]}],"user_data_size":null}}]},"tombstone":false}
{"partition":7,"offset":4,"timestamp_ms":1700000000004,"time":"2023-11-14T22:13:20.004+00:00","type":"OffsetCommit","type_id":1,"key":{"group":"grp","topic":"orders","partition":7},"version":null,"value":null,"tombstone":true,"txn":"aborted"}
{"partition":7,"offset":5,"timestamp_ms":1700000000005,"time":"2023-11-14T22:13:20.005+00:00","type":"Unknown","type_id":99,"key":null,"version":null,"value":null,"tombstone":false,"notes":["unknown record type 99 in __consumer_offsets"],"raw_key":"00633f3f","raw_value":"0000"}
{"partition":7,"offset":6,"timestamp_ms":1700000000006,"time":"2023-11-14T22:13:20.006+00:00","type":"Unknown","type_id":null,"key":null,"version":null,"value":null,"tombstone":true,"notes":["key of 0 bytes has no type prefix"],"raw_key":""}
"""

OFFSETS_TABLE = """\
1 of 7 ─────────────────────────────────────────────────────────────────────────────────────────────
partition  7                                 
offset     0                                 
time       2023-11-14T22:13:20.000+00:00     
type       OffsetCommit                      
key        grp/orders/7                      
version    3                                 
value      offset=5 leader_epoch=-1 metadata=
txn        -                                 
2 of 7 ─────────────────────────────────────────────────────────────────────────────────────────────
partition  7                                 
offset     1                                 
time       2023-11-14T22:13:20.001+00:00     
type       OffsetCommit                      
key        grp/orders/7                      
version    4                                 
value      offset=6 leader_epoch=4 metadata=m
txn        committed                         
3 of 7 ─────────────────────────────────────────────────────────────────────────────────────────────
partition  7                            
offset     2                            
time       2023-11-14T22:13:20.002+00:00
type       OffsetCommit                 
key        grp/orders/7                 
version    1                            
value      offset=5 metadata=x          
txn        -                            
4 of 7 ─────────────────────────────────────────────────────────────────────────────────────────────
partition  7                                                                                        
offset     3                                                                                        
time       2023-11-14T22:13:20.003+00:00                                                            
type       GroupMetadata                                                                            
key        grp                                                                                      
version    3                                                                                        
value      {"protocol_type": "consumer", "generation": 9, "protocol": "range", "leader": "m-1",     
           "current_state_timestamp": 1700, "current_state_time": "1970-01-01T00:00:01.700+00:00",  
           "members": [{"member_id": "m-1", "group_instance_id": "inst-1", "client_id": "client",   
           "client_host": "/10.0.0.1", "rebalance_timeout": 300000, "session_timeout": 45000,       
           "subscription": {"version": 3, "topics": ["orders"], "user_data_size": null,             
           "owned_partitions": [], "generation_id": 5, "rack_id": null}, "assignment": {"version":  
           3, "assigned_partitions": [{"topic": "orders", "partitions": [0, 2]}], "user_data_size": 
           null}}]}                                                                                 
txn        -                                                                                        
5 of 7 ─────────────────────────────────────────────────────────────────────────────────────────────
partition  7                            
offset     4                            
time       2023-11-14T22:13:20.004+00:00
type       OffsetCommit                 
key        grp/orders/7                 
version    -                            
value      (deleted)                    
txn        aborted                      
6 of 7 ─────────────────────────────────────────────────────────────────────────────────────────────
partition  7                            
offset     5                            
time       2023-11-14T22:13:20.005+00:00
type       Unknown                      
key        00633f3f                     
version    -                            
value      raw 0000                     
txn        -                            
7 of 7 ─────────────────────────────────────────────────────────────────────────────────────────────
partition  7                            
offset     6                            
time       2023-11-14T22:13:20.006+00:00
type       Unknown                      
key                                     
version    -                            
value      (deleted)                    
txn        -                            
"""  # noqa: W291 - rich pads each block to its width


@pytest.mark.parametrize(
    ("topic", "jsonl", "table"),
    [(dump.TXN_TOPIC, TXN_JSONL, TXN_TABLE), (dump.OFFSETS_TOPIC, OFFSETS_JSONL, OFFSETS_TABLE)],
    ids=["txn-state", "offsets"],
)
def test_what_dump_writes(monkeypatch, topic, jsonl, table):
    assert _written(monkeypatch, topic, "jsonl") == jsonl
    assert _written(monkeypatch, topic, "json") == _document(jsonl)
    assert _written(monkeypatch, topic, "table") == table
