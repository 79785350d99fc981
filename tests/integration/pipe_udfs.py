"""UDFs used by the `kxtx pipe` integration tests (loaded as tests/integration/pipe_udfs.py:NAME)."""

import time

import pandas as pd
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import StringType


def identity(v):
    return v


def keep_even(v):
    return v if int(v.split(b"-")[1]) % 2 == 0 else None


def fan_out(v):
    return [v, v + b"/copy", {"value": v + b"/keyed", "key": b"k2", "headers": {"from": "fan"}}]


def enrich(doc):
    return {**doc, "total": round(doc["price"] * doc["qty"], 2), "enriched": True}


def enrich_without_kxtx(doc):
    """enrich, on an executor that must not have kxtx (the cluster fixture blocks it)."""
    try:
        import kxtx  # noqa: F401
    except ImportError:
        return enrich(doc)
    raise RuntimeError("kxtx is importable on this executor: the fixture's block is not active")


def route(doc):
    return {"topic": doc["to"], "value": doc, "key": str(doc["n"])}


def poison(v):
    if v == b"poison":
        raise ValueError("cannot handle the poison record")
    return v.upper()


def slow_identity(v):
    time.sleep(0.0005)
    return v


def slow_poison(v):
    """poison, at ~0.25 ms a record: 20,000 records make a 5 s round."""
    time.sleep(0.00025)
    return poison(v)


def sluggish_identity(v):
    """~5 ms a record: a model call, say; 2000 records make a 10 s round."""
    time.sleep(0.005)
    return v


def two_args(a, b):
    return a


@pandas_udf(StringType())
def upper_series(s: pd.Series) -> pd.Series:
    return s.str.upper()


def _touch_marker():
    """Creates $KXTX_TEST_MARKER if it is set and missing: the test's sign that a task has read
    its start offset and is running the UDF."""
    import os

    marker = os.environ.get("KXTX_TEST_MARKER")
    if marker and not os.path.exists(marker):
        open(marker, "w").close()


def marking_slow_identity(v):
    """Touches $KXTX_TEST_MARKER on its first call (the task has read its start offset by
    then), then ~2 ms a record: a window to freeze the task in."""
    _touch_marker()
    time.sleep(0.002)
    return v


def gated_identity(v):
    """Touches $KXTX_TEST_MARKER on its first call, then holds its task until $KXTX_TEST_GATE
    exists (at most 120 s): a round that stays open while the test changes the group."""
    import os

    _touch_marker()
    gate = os.environ.get("KXTX_TEST_GATE")
    deadline = time.monotonic() + 120
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.05)
    return v


def freezing_identity(v):
    """~0.5 ms a record. The record b"freeze|PATH" stops its Python worker (SIGSTOP) the first
    time it is seen: PATH gets the worker's pid first, PATH.thawed once it runs on (SIGCONT)."""
    import os
    import signal

    if v.startswith(b"freeze|"):
        path = v[len(b"freeze|") :].decode()
        if not os.path.exists(path):
            with open(path + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(path + ".tmp", path)
            os.kill(os.getpid(), signal.SIGSTOP)
            open(path + ".thawed", "w").close()
    time.sleep(0.0005)
    return v


# --- schema registry (tests/integration/test_schema_registry_pipe.py) -----------------------------
def registry_enrich(order):
    return {"id": order["id"], "name": order["name"].upper(), "total": (order.get("amount") or 0) * 2}


def registry_interop(order):
    """registry_enrich, the input's nullable `note` passed on as it came (None, "" or a text)."""
    return {**registry_enrich(order), "note": order.get("note")}


def registry_shape(order):
    """How many fields the decoded record had: 3 for version 1 of the schema, 4 for version 2."""
    return {"id": order["id"], "name": order.get("note") or order["name"], "total": float(len(order))}


def registry_bad_total(order):
    return {"id": order["id"], "name": order["name"], "total": "lots" if order["id"] == 5 else 1.0}


def registry_declared(order):
    return registry_enrich(order)


#: the output schema this UDF declares (what --out-schema takes), named from this file's folder
registry_declared.out_schema = "registry_enriched.avsc"
