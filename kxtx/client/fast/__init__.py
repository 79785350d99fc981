"""The client tier's fast path: records handed to librdkafka a batch at a time (the annex: kxtx.fast)."""
