"""The client tier: connection settings, the Kafka clients kxtx makes and how their errors read.

Imports only the base modules at the top of `kxtx/` and its own (tests/unit/test_import_graph.py).
"""
