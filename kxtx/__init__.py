"""kxtx: a toolkit for operating Apache Kafka transactions."""

__version__ = "0.1.0"
