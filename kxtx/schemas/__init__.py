"""Schema Registry serdes: the Confluent wire format (`framing`), the Avro and JSON Schema codecs
(`codecs`), and schemas looked up, chosen and cached through a registry (`serde`)."""
