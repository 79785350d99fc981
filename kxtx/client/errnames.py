"""Kafka error names that mean one thing wherever kxtx meets them.

No imports: Spark workers get this module by value with the rest of the worker code
(`kxtx.pipe.worker.SHIPPED_WITH`), where kxtx itself may not be installed.
"""

#: The producer's epoch was bumped by a newer producer with its transactional id: it can do
#: nothing more (`_FENCED` is librdkafka's local name, the other two what brokers answer).
PRODUCER_FENCED = frozenset({"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})
