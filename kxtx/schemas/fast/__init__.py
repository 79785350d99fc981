"""The schema codecs' fast path: column-wise Avro (the annex: kxtx.fast; fastavro is the general one)."""
