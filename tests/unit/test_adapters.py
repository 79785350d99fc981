"""The adapters on other libraries' internals check them once, and fail with one line naming the
version when one is missing (instead of an AttributeError deep inside a call)."""

from __future__ import annotations

import pytest

from kxtx.client import kafka_internals
from kxtx.errors import KxtxError
from kxtx.pipe import spark_internals


def test_kafka_pythons_admin_client_has_what_kxtx_uses():
    from kafka.admin import KafkaAdminClient

    class Admin:  # the class's own attributes, without connecting an instance
        _manager = type(
            "M", (), {"run": 1, "send": 1, "get_connection": 1, "cluster": type("C", (), {"brokers": 1})}
        )
        _async_get_leader_for_partitions = KafkaAdminClient._async_get_leader_for_partitions
        _find_coordinator_id = KafkaAdminClient._find_coordinator_id

    kafka_internals.check(Admin())  # no error
    for path in kafka_internals.USED:  # each used name exists on kafka-python's class or manager
        top = path.split(".")[0]
        assert top == "_manager" or hasattr(KafkaAdminClient, top), path


@pytest.mark.parametrize("missing", ["_manager", "_find_coordinator_id", "_async_get_leader_for_partitions"])
def test_a_kafka_python_without_an_internal_is_one_line_naming_it(missing):
    import kafka

    attrs = {
        "_manager": type(
            "M", (), {"run": 1, "send": 1, "get_connection": 1, "cluster": type("C", (), {"brokers": 1})}
        ),
        "_async_get_leader_for_partitions": 1,
        "_find_coordinator_id": 1,
    }
    del attrs[missing]
    with pytest.raises(KxtxError) as err:
        kafka_internals.check(type("Admin", (), attrs)())
    text = str(err.value)
    assert f"kafka-python {kafka.__version__} has no KafkaAdminClient.{missing}" in text
    assert "\n" not in text and "pip install" in text


def test_pysparks_context_has_what_kxtx_uses(monkeypatch):
    pytest.importorskip("pyspark")
    from pyspark import SparkContext

    assert all(hasattr(SparkContext, name) for name in spark_internals.USED)
    monkeypatch.setattr(spark_internals, "_checked", False)
    monkeypatch.delattr(SparkContext, "_gateway")
    with pytest.raises(KxtxError, match=r"^pyspark \S+ has no SparkContext\._gateway, .*pip install"):
        spark_internals.jvm_running()
