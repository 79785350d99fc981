"""What `inspect txn` writes for a pipe's ids (each id's view after the pipe's table) and for one id,
and what `sandbox status` and `sandbox start` write of a secured sandbox, byte for byte, from results
built by the library's own functions (issue 44: typed results)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from kxtx.cli import output
from kxtx.cli.common import OutputFormat


def _stdout(monkeypatch, fmt: str, rows_key: str | None, run) -> str:
    """What `run()` (a command's body, without its boundary) writes on stdout as `fmt`."""
    monkeypatch.setenv("COLUMNS", "100")
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", out)
    with output.document(OutputFormat(fmt), rows_key) as doc:
        run()
        if doc is not None:
            doc.write(0)
    out.flush()
    return raw.getvalue().decode("utf-8")


# --- inspect txn ---------------------------------------------------------------------------------
def _view(tid: str, state: str, verdict: str, parts: list[tuple[str, int, bool]]) -> dict:
    return {
        "transactional_id": tid,
        "verdict": verdict,
        "coordinator": 1,
        "state": state,
        "producer_id": 5,
        "producer_epoch": 2,
        "partitions": [
            {"topic": t, "partition": p, "leader": 1, "lso": 3, "high_watermark": 4, "blocking": b}
            for t, p, b in parts
        ],
        "history": [],
    }


def _pipe() -> dict:
    from kxtx.ops import decide, pipeids

    members = {"p.t.0": ("t", 0), "p.t.1": ("t", 1)}
    views = [
        _view("p.t.0", "CompleteCommit", "idle (last transaction: CompleteCommit)", [("o", 0, False)]),
        _view("p.t.1", "Ongoing", "ongoing for 2s (timeout 1m00s)", [("o", 0, False), ("o", 1, True)]),
    ]
    kinds = {"p.t.0": decide.IDLE, "p.t.1": decide.ONGOING}
    return pipeids.pipe_view("p", members, pipeids.CLIENT_FILTER, views, kinds)


def _inspected(monkeypatch, fmt: str, result) -> str:
    """What `kxtx inspect txn ID -o FMT` writes when the library's answer is `result`."""
    from kxtx.cli import inspection as cli
    from kxtx.client import admin as calls
    from kxtx.ops import inspection

    monkeypatch.setattr(calls, "Cluster", lambda settings: contextlib.nullcontext())
    monkeypatch.setattr(inspection, "inspect_txn", lambda *args, **kwargs: result)

    def run() -> None:
        cli.txn.__wrapped__(
            transactional_id="p",
            no_history=False,
            no_scan=False,
            max_transaction_timeout=None,
            bootstrap=["localhost:9092"],
            config=None,
            command_config=None,
            timeout=None,
            fmt=OutputFormat(fmt),
        )

    return _stdout(monkeypatch, fmt, None, run)


# --- sandbox -------------------------------------------------------------------------------------
def _state(state: Path) -> None:
    """A secured sandbox's state file as `sandbox start --security sasl_ssl` writes it (its extra
    from the listeners' own `extra()`), its one node stopped (no such pid), its client properties
    written."""
    from kxtx.sandbox.nodes import NodeInfo, SandboxInfo
    from kxtx.sandbox.security import SecureListeners

    listeners = SecureListeners("sasl_ssl", passwords={"admin": "a1", "limited": "b2"}, store_password="s3")
    listeners.dir = state / "security"
    listeners.dir.mkdir(parents=True)
    for user in ("admin", "limited"):
        (listeners.dir / f"{user}.properties").write_text(
            f"sasl.username={user}\nsecurity.protocol=SASL_SSL\n"
        )
    node = NodeInfo(1, 19092, 19093, str(state), 2**22 + 7)
    info = SandboxInfo(
        bootstrap="127.0.0.1:19092",
        kafka_version="4.1.0",
        pid=node.pid,
        port=19092,
        controller_port=19093,
        state_dir=str(state),
        libs="/libs",
        started_at=0.0,
        broker_config={"log.retention.ms": "60000"},
        extra=listeners.extra(),
        nodes=[asdict(node)],
    )
    (state / "sandbox.json").write_text(json.dumps(asdict(info), indent=2))


def _sandbox(monkeypatch, tmp_path: Path, command: str, fmt: str) -> str:
    """What `kxtx sandbox status|start --state-dir s -o FMT` writes (start: its sandbox already up,
    as `Sandbox.start` returns it); `s` is relative: the paths shown are the same in every run."""
    from kxtx.cli import sandbox as cli
    from kxtx.sandbox import broker

    tmp_path.mkdir()
    monkeypatch.chdir(tmp_path)
    state = Path("s")
    _state(state)
    monkeypatch.setattr(broker.Sandbox, "start", lambda self, **kwargs: self.info())

    def run() -> None:
        if command == "status":
            with contextlib.suppress(cli.typer.Exit):  # exit 3: the node is not running
                cli.status.__wrapped__(state_dir=str(state), fmt=OutputFormat(fmt))
        else:
            cli.start.__wrapped__(
                kafka_version="4",
                port=0,
                broker_config=None,
                kafka_home="/kafka",
                state_dir=str(state),
                security=cli.Security.plaintext,
                brokers=1,
                heap=None,
                export=False,
                fmt=OutputFormat(fmt),
            )

    return _stdout(monkeypatch, fmt, None, run)


PIPE_TABLE = """\
                                               pipe p                                               
transactional_id  p                                                                                 
state             unknown to the coordinator                                                        
pipe              kxtx pipe in executors mode: a transactional id per input partition,              
                  p.TOPIC.PARTITION                                                                 
id_filter         client: every listed transactional id, filtered here (brokers before Kafka 4.1)   
verdict           2 transactional ids, one per input partition: 1 ongoing, 1 idle; holding an LSO:  
                  p.t.1 on o:1                                                                      
counts            {"ongoing": 1, "idle": 1}                                                         

transactional_ids
1 of 2 ─────────────────────────────────────────────────────────────────────────────────────────────
transactional_id  p.t.0                                  
input             t:0                                    
state             CompleteCommit                         
producer_id       5                                      
producer_epoch    2                                      
partitions        ["o:0"]                                
holding_lso       []                                     
verdict           idle (last transaction: CompleteCommit)
2 of 2 ─────────────────────────────────────────────────────────────────────────────────────────────
transactional_id  p.t.1                         
input             t:1                           
state             Ongoing                       
producer_id       5                             
producer_epoch    2                             
partitions        ["o:0", "o:1"]                
holding_lso       ["o:1"]                       
verdict           ongoing for 2s (timeout 1m00s)
                    transaction p.t.0                    
transactional_id  p.t.0                                  
verdict           idle (last transaction: CompleteCommit)
coordinator       1                                      
state             CompleteCommit                         
producer_id       5                                      
producer_epoch    2                                      
history           []                                     

                           partitions                           
┏━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━┳━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━┓
┃ topic ┃ partition ┃ leader ┃ lso ┃ high_watermark ┃ blocking ┃
┡━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━╇━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━┩
│ o     │ 0         │ 1      │ 3   │ 4              │ False    │
└───────┴───────────┴────────┴─────┴────────────────┴──────────┘
               transaction p.t.1                
transactional_id  p.t.1                         
verdict           ongoing for 2s (timeout 1m00s)
coordinator       1                             
state             Ongoing                       
producer_id       5                             
producer_epoch    2                             
history           []                            

                           partitions                           
┏━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━┳━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━┓
┃ topic ┃ partition ┃ leader ┃ lso ┃ high_watermark ┃ blocking ┃
┡━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━╇━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━┩
│ o     │ 0         │ 1      │ 3   │ 4              │ False    │
│ o     │ 1         │ 1      │ 3   │ 4              │ True     │
└───────┴───────────┴────────┴─────┴────────────────┴──────────┘
"""  # noqa: W291 - rich pads the key/value tables to their width
PIPE_JSONL = """\
{"transactional_id":"p","state":"unknown to the coordinator","pipe":"kxtx pipe in executors mode: a transactional id per input partition, p.TOPIC.PARTITION","id_filter":"client: every listed transactional id, filtered here (brokers before Kafka 4.1)","verdict":"2 transactional ids, one per input partition: 1 ongoing, 1 idle; holding an LSO: p.t.1 on o:1","counts":{"ongoing":1,"idle":1},"transactional_ids":[{"transactional_id":"p.t.0","input":"t:0","state":"CompleteCommit","producer_id":5,"producer_epoch":2,"partitions":["o:0"],"holding_lso":[],"verdict":"idle (last transaction: CompleteCommit)"},{"transactional_id":"p.t.1","input":"t:1","state":"Ongoing","producer_id":5,"producer_epoch":2,"partitions":["o:0","o:1"],"holding_lso":["o:1"],"verdict":"ongoing for 2s (timeout 1m00s)"}],"details":[{"transactional_id":"p.t.0","verdict":"idle (last transaction: CompleteCommit)","coordinator":1,"state":"CompleteCommit","producer_id":5,"producer_epoch":2,"partitions":[{"topic":"o","partition":0,"leader":1,"lso":3,"high_watermark":4,"blocking":false}],"history":[]},{"transactional_id":"p.t.1","verdict":"ongoing for 2s (timeout 1m00s)","coordinator":1,"state":"Ongoing","producer_id":5,"producer_epoch":2,"partitions":[{"topic":"o","partition":0,"leader":1,"lso":3,"high_watermark":4,"blocking":false},{"topic":"o","partition":1,"leader":1,"lso":3,"high_watermark":4,"blocking":true}],"history":[]}]}
"""
ONE_JSONL = """\
{"transactional_id":"p.t.1","verdict":"ongoing for 2s (timeout 1m00s)","coordinator":1,"state":"Ongoing","producer_id":5,"producer_epoch":2,"partitions":[{"topic":"o","partition":0,"leader":1,"lso":3,"high_watermark":4,"blocking":false},{"topic":"o","partition":1,"leader":1,"lso":3,"high_watermark":4,"blocking":true}],"history":[]}
"""
STATUS_TABLE = """\
                                              sandbox                                               
running            False                                                                            
bootstrap          127.0.0.1:19092                                                                  
kafka_version      4.1.0                                                                            
pid                4194311                                                                          
state_dir          s                                                                                
uptime_s           -                                                                                
broker_config      {"log.retention.ms": "60000"}                                                    
security           sasl_ssl                                                                         
client_properties  {"admin": "s/security/admin.properties", "limited":                              
                   "s/security/limited.properties"}                                                 
principals         {"admin": "User:admin (super user)", "limited": "User:limited (ALL on            
                   Topic/Group/TransactionalId prefixed 'limited.')"}                               

                                         nodes                                         
┏━━━━┳━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━━━━┓
┃ id ┃ state   ┃ roles             ┃ port  ┃ controller_port ┃ pid     ┃ log          ┃
┡━━━━╇━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━━━━┩
│ 1  │ stopped │ broker,controller │ 19092 │ 19093           │ 4194311 │ s/broker.log │
└────┴─────────┴───────────────────┴───────┴─────────────────┴─────────┴──────────────┘
"""  # noqa: W291 - rich pads the key/value tables to their width
STATUS_JSONL = """\
{"running":false,"bootstrap":"127.0.0.1:19092","kafka_version":"4.1.0","pid":4194311,"state_dir":"s","uptime_s":null,"broker_config":{"log.retention.ms":"60000"},"security":"sasl_ssl","client_properties":{"admin":"s/security/admin.properties","limited":"s/security/limited.properties"},"principals":{"admin":"User:admin (super user)","limited":"User:limited (ALL on Topic/Group/TransactionalId prefixed 'limited.')"},"nodes":[{"id":1,"state":"stopped","roles":"broker,controller","port":19092,"controller_port":19093,"pid":4194311,"log":"s/broker.log"}]}
"""
START_TABLE = """\
                                              sandbox                                               
running             False                                                                           
bootstrap           127.0.0.1:19092                                                                 
kafka_version       4.1.0                                                                           
pid                 4194311                                                                         
state_dir           s                                                                               
uptime_s            -                                                                               
broker_config       {"log.retention.ms": "60000"}                                                   
security            sasl_ssl                                                                        
client_properties   {"admin": "s/security/admin.properties", "limited":                             
                    "s/security/limited.properties"}                                                
principals          {"admin": "User:admin (super user)", "limited": "User:limited (ALL on           
                    Topic/Group/TransactionalId prefixed 'limited.')"}                              
admin.properties    sasl.username=admin                                                             
                    security.protocol=SASL_SSL                                                      
                                                                                                    
limited.properties  sasl.username=limited                                                           
                    security.protocol=SASL_SSL                                                      
                                                                                                    

                                         nodes                                         
┏━━━━┳━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━━━━┓
┃ id ┃ state   ┃ roles             ┃ port  ┃ controller_port ┃ pid     ┃ log          ┃
┡━━━━╇━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━━━━┩
│ 1  │ stopped │ broker,controller │ 19092 │ 19093           │ 4194311 │ s/broker.log │
└────┴─────────┴───────────────────┴───────┴─────────────────┴─────────┴──────────────┘
"""  # noqa: W291, W293 - rich pads the key/value tables to their width
START_JSONL = """\
{"running":false,"bootstrap":"127.0.0.1:19092","kafka_version":"4.1.0","pid":4194311,"state_dir":"s","uptime_s":null,"broker_config":{"log.retention.ms":"60000"},"security":"sasl_ssl","client_properties":{"admin":"s/security/admin.properties","limited":"s/security/limited.properties"},"principals":{"admin":"User:admin (super user)","limited":"User:limited (ALL on Topic/Group/TransactionalId prefixed 'limited.')"},"nodes":[{"id":1,"state":"stopped","roles":"broker,controller","port":19092,"controller_port":19093,"pid":4194311,"log":"s/broker.log"}],"admin.properties":"sasl.username=admin\\nsecurity.protocol=SASL_SSL\\n","limited.properties":"sasl.username=limited\\nsecurity.protocol=SASL_SSL\\n"}
"""


def _document(jsonl: str) -> str:
    """The json document of a command whose jsonl line is `jsonl`."""
    doc = {"status": "ok", "exit_code": 0, "error": None, **json.loads(jsonl)}
    return output._dumps(doc, indent=2) + "\n"


def test_inspect_txn_of_a_pipe_shows_its_table_then_each_ids_view(monkeypatch):
    assert _inspected(monkeypatch, "table", _pipe()) == PIPE_TABLE
    assert _inspected(monkeypatch, "jsonl", _pipe()) == PIPE_JSONL
    assert _inspected(monkeypatch, "json", _pipe()) == _document(PIPE_JSONL)


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_inspect_txn_of_one_id(monkeypatch, fmt):
    view = json.loads(PIPE_JSONL)["details"][1]
    assert json.loads(ONE_JSONL) == view
    expected = ONE_JSONL if fmt == "jsonl" else _document(ONE_JSONL)
    assert _inspected(monkeypatch, fmt, view) == expected


@pytest.mark.parametrize(
    ("command", "table", "jsonl"),
    [("status", STATUS_TABLE, STATUS_JSONL), ("start", START_TABLE, START_JSONL)],
)
def test_a_secured_sandbox(monkeypatch, tmp_path, command, table, jsonl):
    assert _sandbox(monkeypatch, tmp_path / "table", command, "table") == table
    assert _sandbox(monkeypatch, tmp_path / "jsonl", command, "jsonl") == jsonl
    assert _sandbox(monkeypatch, tmp_path / "json", command, "json") == _document(jsonl)


def test_the_readiness_probe_of_a_secured_sandbox_signs_in_as_its_admin(monkeypatch, tmp_path):
    """`Sandbox.start` waits until the brokers answer an admin client configured from the state."""
    from confluent_kafka import admin

    from kxtx.sandbox.broker import Sandbox

    asked = []

    class Admin:
        def __init__(self, conf):
            asked.append(conf)

        def list_topics(self, timeout):
            raise RuntimeError("not up")

    monkeypatch.setattr(admin, "AdminClient", Admin)
    _state(tmp_path)
    sandbox = Sandbox(tmp_path)
    assert sandbox.brokers_in_metadata(sandbox.info()) == set()
    admin_client = json.loads((tmp_path / "sandbox.json").read_text())["extra"]["admin_client"]
    assert admin_client["sasl.username"] == "admin"
    assert asked == [{"bootstrap.servers": "127.0.0.1:19092", "log_level": 2, **admin_client}]
